// The HDF5 layout of the log's tables, shared by the writer and the reader: one extendible
// column per field, under a prefix ("" for the live tables, "superseded/1/" for rows a resume
// replaced). Column names are the reference in docs/witness-format.md.
#pragma once

#include <string>
#include <vector>

#include "core/h5.h"
#include "record/reader.h"

namespace wit::witness::io {

// Open handles to every column of one set of tables, for appending.
struct TableColumns {
  // /steps
  h5::Dataset step, tokens, lr, weight_decay, beta1, beta2, eps, grad_clip, loss, grad_norm,
      clip_factor, batch_hash, rng_commitment, weight_fingerprint, prev_hash, record_hash,
      wall_time, step_seconds;
  // /fingerprints
  h5::Dataset fp_step, fp_mean_logprob, fp_argmax_digest, fp_anchor, fp_prev, fp_hash;
  // /checkpoints
  h5::Dataset ck_step, ck_state_hash, ck_anchor, ck_prev, ck_hash;
  // /evals
  h5::Dataset ev_step, ev_split, ev_metric, ev_value, ev_anchor, ev_prev, ev_hash;
  // /signatures
  h5::Dataset sg_steps, sg_fingerprints, sg_checkpoints, sg_evals, sg_head, sg_public_key, sg_signature,
      sg_wall_time;
  uint64_t fingerprint_width = 0;
};

TableColumns create_tables(h5::Group& root, const std::string& prefix, uint64_t fingerprint_width);
TableColumns open_tables(h5::Group& root, const std::string& prefix);

// Appends rows to each table (bulk: one write per column).
void append_steps(TableColumns& c, const std::vector<StepRow>& rows);
void append_fingerprints(TableColumns& c, const std::vector<FingerprintRow>& rows);
void append_checkpoints(TableColumns& c, const std::vector<CheckpointRow>& rows);
void append_evals(TableColumns& c, const std::vector<EvalRow>& rows);
void append_signatures(TableColumns& c, const std::vector<SignatureRow>& rows);
void append_all(TableColumns& c, const Tables& t);

// Reads the complete rows of every table; columns of unequal length are reported in `incomplete`.
Tables read_tables(const h5::Group& root, const std::string& prefix,
                   std::vector<Finding>& incomplete);

// What schema 2 defines: /meta's attributes, and each table's columns ("steps", "evals", …).
const std::vector<std::string>& meta_attributes();
const std::vector<std::string>& table_columns(const std::string& table);

void write_meta(h5::File& f, const RunMeta& m);
RunMeta read_meta(const h5::File& f, Digest& stored_genesis);

}  // namespace wit::witness::io
