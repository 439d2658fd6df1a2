"""Whether a board's pages fit a screen's width: each page is loaded in headless Chromium inside
an iframe of the given width, and the page's own scroll width is read from the iframe. The
harness and the pages must share an origin for that, so this script serves the harness and
relays every other path to the board.

Usage: page_width.py CHROMIUM PROFILE_DIR BOARD_URL WIDTH PATH...
Prints one line per page: "PATH: width W, scroll width S"; exits 1 when a page scrolls sideways.
"""
import http.server, re, subprocess, sys, threading, urllib.error, urllib.request

chromium, profile, board, width = sys.argv[1], sys.argv[2], sys.argv[3].rstrip("/"), int(sys.argv[4])
paths = sys.argv[5:]
HARNESS = """<!DOCTYPE html><html><body style="margin:0">
<iframe id="f" style="width:%dpx;height:900px;border:0"></iframe><pre id="out">pending</pre>
<script>
const f = document.getElementById('f');
f.onload = () => {
  const e = f.contentDocument.documentElement;
  document.getElementById('out').textContent = 'width ' + e.clientWidth + ' scroll ' + e.scrollWidth;
};
f.src = location.hash.slice(1);
</script></body></html>""" % width


class Relay(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/harness.html":
            body, kind, status = HARNESS.encode(), "text/html", 200
        else:
            try:
                with urllib.request.urlopen(board + self.path) as r:
                    body, kind, status = r.read(), r.headers["Content-Type"], r.status
            except urllib.error.HTTPError as e:
                body, kind, status = e.read(), e.headers["Content-Type"], e.code
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Relay)
threading.Thread(target=server.serve_forever, daemon=True).start()
relay = f"http://127.0.0.1:{server.server_port}"
bad = 0
for path in paths:
    dom = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                          f"--user-data-dir={profile}", "--virtual-time-budget=5000", "--dump-dom",
                          f"{relay}/harness.html#{path}"],
                         capture_output=True, text=True, timeout=120).stdout
    m = re.search(r'id="out">width (\d+) scroll (\d+)<', dom)
    if not m:
        print(f"{path}: the harness did not measure it")
        bad += 1
        continue
    w, s = int(m.group(1)), int(m.group(2))
    print(f"{path}: width {w}, scroll width {s}")
    bad += s > w
server.shutdown()
sys.exit(1 if bad else 0)
