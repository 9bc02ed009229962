/* SPDX-License-Identifier: Apache-2.0 */
/*
 * yaml.h - YAML (or JSON) documents to jansson values and back, through libyaml.
 *
 * Used for Job files (`render -f`), kubeconfig and `render -o yaml`. Reentrant.
 */
#ifndef WH_YAML_H
#define WH_YAML_H

#include <jansson.h>
#include <stddef.h>

#include "base/error.h"

/**
 * Parse the first document of a YAML 1.1/1.2 (JSON is YAML) text into JSON.
 * Plain scalars are typed as Kubernetes' YAML reader does (sigs.k8s.io/yaml,
 * go-yaml v2's YAML 1.1 resolver): null/~/empty → null; true/false/yes/no/on/off/y/n
 * (any case form go-yaml accepts) → bool; decimal, 0x, 0o, 0b and leading-0 octal
 * integers → integer (beyond int64 → real); floats → real; .inf/.nan and
 * timestamps → string; else string. Quoted and block
 * scalars are always strings. A repeated mapping key: the last value wins (as
 * sigs.k8s.io/yaml does for the published examples that repeat `queue`); only
 * yaml_load_file_documents says where.
 * Anchors and aliases are resolved; merge keys `<<` are not supported.
 *
 * @param[out] out  new reference on success
 * @return 0; WH_EINVAL with "line L column C: problem" in err on a syntax error
 *         or an empty stream; WH_ENOMEM.
 */
int yaml_load_buffer(const char *buf, size_t len, json_t **out, struct wh_error *err);

/**
 * Every document of a YAML stream ("---"-separated), parsed as yaml_load_buffer
 * parses one, as kubectl reads a multi-document file. Anchors are per document;
 * the node cap counts the whole stream. An empty document ("---" alone) is a null.
 * @param[out] docs_out  new reference to a JSON array of at least one value, on 0
 * @return as yaml_load_buffer (an empty stream is WH_EINVAL "empty document").
 */
int yaml_load_documents(const char *buf, size_t len, json_t **docs_out, struct wh_error *err);

/**
 * yaml_load_buffer on a whole file (at most 16 MiB); path "-" reads standard input.
 * @return as yaml_load_buffer; WH_ERROR with the strerror text when it cannot be
 *         read; WH_ETOOBIG over the cap. Messages do not repeat the path.
 */
int yaml_load_file(const char *path, json_t **out, struct wh_error *err);

/**
 * yaml_load_documents on a whole file, read as yaml_load_file reads it ("-": standard
 * input; at most 16 MiB), listing each repeated mapping key: the value kept is still
 * the last one, but a user who wrote a key twice (the published examples repeat
 * `queue`) may have meant the first.
 * @param[out] docs_out  new reference to the array, on 0
 * @param[out] dups_out  NULL (not listed), or on 0 a new reference to an array, in
 *                       file order, of {"document": N, "line": L, "column": C (all
 *                       1-based, of the repeated key), "key": K, "path": field path
 *                       such as "spec.queue" or "spec.tasks[0].name" (cut at 511 bytes)}
 * @return as yaml_load_documents, and yaml_load_file's WH_ERROR / WH_ETOOBIG.
 */
int yaml_load_file_documents(const char *path, json_t **docs_out, json_t **dups_out,
                             struct wh_error *err);

/**
 * v as one YAML document through libyaml's emitter: block style, object members in
 * their order, no "---", lines never folded. A string that a plain scalar would not
 * give back (what yaml_load_buffer types as null, bool or number, "", .inf, a
 * timestamp, "1:20", "<<") is double-quoted; a string with a line break is a
 * literal block (|) where libyaml allows one. A real keeps a "." or exponent, so
 * yaml_load_buffer(yaml_dump_buffer(v)) equals v for every value without a NUL.
 * @param v         borrowed
 * @param[out] text_out  malloc'd NUL-terminated text, the caller's to free(), on 0
 * @param[out] len_out   its length in bytes (may be NULL)
 * @return 0; WH_ENOMEM; WH_EINVAL when v nests deeper than 1000 levels or a string
 *         is too long for libyaml.
 */
int yaml_dump_buffer(const json_t *v, char **text_out, size_t *len_out, struct wh_error *err);

#endif
