#!/usr/bin/python3
"""Load on a running board (loopback): SUBMITTERS threads each upload a fresh 1 MiB file and
submit their tiny run, over and over (the first submission enters it; the board audits each
later one the same way and refuses it as a copy), while reader threads ask for pages at a fixed
total rate, for DURATION seconds. Prints one JSON line: submissions audited, entries and uploads
per second, page latency percentiles, errors, and whether every accepted entry is on the track.

Usage: board_load.py URL TOKENS_FILE RUNS_DIR [DURATION] [READS_PER_SECOND]
  TOKENS_FILE: one participant token per line, one submitter each; RUNS_DIR/N (N = 0, 1, ...)
  holds submitter N's finished run.
"""
import hashlib, http.client, json, os, sys, threading, time, urllib.parse

url, tokens_file, runs_dir = sys.argv[1:4]
duration = float(sys.argv[4]) if len(sys.argv) > 4 else 60
rate = float(sys.argv[5]) if len(sys.argv) > 5 else 200
tokens = [t.strip() for t in open(tokens_file) if t.strip()]
host = urllib.parse.urlparse(url)


def request(method, path, body=b"", token=None):
    c = http.client.HTTPConnection(host.hostname, host.port, timeout=120)
    headers = {"Authorization": "Bearer " + token} if token else {}
    c.request(method, path, body=body, headers=headers)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def upload(data, token):
    sha = hashlib.sha256(data).hexdigest()
    status, body = request("GET", f"/api/files/{sha}?size={len(data)}", token=token)
    if status != 200:
        raise RuntimeError(f"GET /api/files: {status} {body[:200]}")
    at = json.loads(body)["offset"]
    while at < len(data):
        piece = data[at:at + (8 << 20)]
        status, body = request("PUT", f"/api/files/{sha}?offset={at}", piece, token)
        if status != 200:
            raise RuntimeError(f"PUT /api/files: {status} {body[:200]}")
        at = json.loads(body)["offset"]
    return sha


lock = threading.Lock()
accepted, errors, uploads, uploaded_bytes, latencies, copies = [], [], [0], [0], {}, [0]
deadline = time.monotonic() + duration


def submitter(i, token):
    run = os.path.join(runs_dir, str(i))
    names = ["witness.h5", "config.yaml", "model.safetensors"] + [
        "checkpoints/" + f for f in sorted(os.listdir(os.path.join(run, "checkpoints")))]
    files = {n: open(os.path.join(run, n), "rb").read() for n in names}
    k = 0
    while time.monotonic() < deadline:
        try:
            fresh = os.urandom(1 << 20)
            upload(fresh, token)
            shas = {n: upload(d, token) for n, d in files.items()}
            status, body = request("POST", "/api/entries", json.dumps(
                {"track": "kjv-tiny", "name": f"load {i}.{k}", "files": shas}).encode(), token)
            # The board enters a run once: later submissions of it are audited the same way,
            # then refused as copies of the first (400 naming it).
            copy = status == 400 and b"of this run are entry" in body
            if status != 201 and not copy:
                raise RuntimeError(f"POST /api/entries: {status} {body[:300]}")
            with lock:
                if copy:
                    copies[0] += 1
                else:
                    accepted.append(json.loads(body)["id"])
                uploads[0] += 1
                uploaded_bytes[0] += len(fresh)
        except Exception as e:  # noqa: BLE001 - every failure is counted and shown
            with lock:
                errors.append(f"submitter {i}: {e}")
        k += 1


def reader(index, readers):
    pages = ["/", "/tracks/kjv-tiny", "/api/tracks", "/entries/{}", "/api/entries/{}"]
    period = readers / rate
    next_at = time.monotonic() + index * period / readers
    n = 0
    while True:
        now = time.monotonic()
        if now >= deadline:
            return
        if next_at > now:
            time.sleep(next_at - now)
        next_at += period
        with lock:
            some = accepted[n % len(accepted)] if accepted else None
        page = pages[n % len(pages)]
        n += 1
        if "{}" in page:
            if some is None:
                continue
            page = page.format(some)
        start = time.monotonic()
        try:
            status, _ = request("GET", page)
            ok = status == 200
        except Exception as e:  # noqa: BLE001
            ok, status = False, str(e)
        took = time.monotonic() - start
        kind = page.split("/")[1] + ("/" + page.split("/")[2] if page.startswith("/api/") else "")
        with lock:
            latencies.setdefault(kind if "{" not in kind else kind, []).append(took)
            if not ok:
                errors.append(f"GET {page}: {status}")


threads = [threading.Thread(target=submitter, args=(i, t)) for i, t in enumerate(tokens)]
readers = 32  # blocking readers: enough that a slow answer does not lower the offered rate
threads += [threading.Thread(target=reader, args=(r, readers)) for r in range(readers)]
began = time.monotonic()
for t in threads:
    t.start()
for t in threads:
    t.join()
elapsed = time.monotonic() - began

status, body = request("GET", "/api/tracks/kjv-tiny")
on_track = {e["id"] for e in json.loads(body)["entries"]}
lost = [e for e in accepted if e not in on_track]
every = sorted(x for v in latencies.values() for x in v)


def pct(xs, p):
    return round(1000 * xs[min(len(xs) - 1, int(p * len(xs)))], 1) if xs else None


print(json.dumps({
    "seconds": round(elapsed, 1),
    "submitters": len(tokens),
    "entries": len(accepted),
    "entries_per_s": round(len(accepted) / elapsed, 2),
    "copies_refused": copies[0],
    "submissions_audited_per_s": round((len(accepted) + copies[0]) / elapsed, 2),
    "fresh_uploads_per_s": round(uploads[0] / elapsed, 2),
    "fresh_upload_mib_per_s": round(uploaded_bytes[0] / elapsed / (1 << 20), 2),
    "page_reads": len(every),
    "page_reads_per_s": round(len(every) / elapsed, 1),
    "page_ms_p50": pct(every, 0.5),
    "page_ms_p99": pct(every, 0.99),
    "page_ms_max": pct(every, 1.0),
    "by_page_ms_p50_p99": {k: [pct(sorted(v), 0.5), pct(sorted(v), 0.99)] for k, v in sorted(latencies.items())},
    "errors": len(errors),
    "first_errors": errors[:5],
    "lost_entries": len(lost),
}))
sys.exit(1 if errors or lost else 0)
