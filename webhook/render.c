/* SPDX-License-Identifier: Apache-2.0 */
/*
 * render.c - `render`: the admission code path without a server or cluster.
 *
 *   render -f JOB [--namespace NS] [-o pod|yaml|patch]   every pod of the Job, mutated
 *   render -f JOB --pod POD [--namespace NS] [-o pod|yaml|patch]
 *   render -f JOB --task NAME [--index N] [--namespace NS] [-o pod|yaml|patch]
 *   render -f JOB --review REVIEW                     the AdmissionReview answer
 *
 * JOB may hold several Jobs ("---"-separated, or a List, as kubectl takes them),
 * and -f may be repeated: without --pod, --task or --review every Job's pods are
 * rendered, in file order, at most RENDER_MAX_PODS of them. "-" is stdin.
 *
 * Single-threaded. Output on stdout only on success; problems are one line on
 * stderr ("volcano-plugin-webhook: render: FILE: problem") and exit status 1; bad
 * usage is one line too, as for serve and gen-certs, and exits 2.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/jsonobj.h"
#include "base/log.h"
#include "base/sanitize.h"
#include "k8s/yaml.h"
#include "plugins/diagnose.h"
#include "plugins/job.h"
#include "plugins/jobpods.h"
#include "webhook/admission.h"
#include "webhook/commands.h"
#include "webhook/flags.h"
#include "webhook/mutate.h"

#define REVIEW_MAX_BYTES (3u << 20) /* the server's body cap */

/* The most pods render builds at once. It holds them all until it prints the List
 * (about 16 KiB each for the examples: some 320 MiB at the cap), so a Job of 2^31
 * replicas is refused rather than grown without end; 1 master + 10,000 workers fits,
 * and --task/--index renders any one pod of a larger Job. */
#define RENDER_MAX_PODS      20000
#define RENDER_MAX_PODS_TEXT FLAGS_STR(RENDER_MAX_PODS) /* in --help */

#define RENDER_MAX_INDEX 2147483646 /* INT32_MAX - 1: replicas is an int32 */

enum output {
    OUTPUT_POD,   /* the mutated pods, JSON */
    OUTPUT_YAML,  /* the same, YAML */
    OUTPUT_PATCH, /* the JSON Patch ops, JSON */
};

/*
 * One problem line on stderr: "volcano-plugin-webhook: render: " fmt "\n". The
 * values are the user's text (file content, names, flags): control characters
 * become '?', so a message stays one line and cannot drive the terminal.
 */
__attribute__((format(printf, 1, 2))) static void render_err(const char *fmt, ...)
{
    char line[4096];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    sanitize_controls(line);
    fprintf(stderr, WH_PROG ": render: %s\n", line);
}

/* getopt_long ids of the flags without a short name */
enum {
    OPT_POD = 256,
    OPT_REVIEW,
    OPT_NAMESPACE,
    OPT_TASK,
    OPT_INDEX,
    OPT_STRICT,
};

/* The flags, in --help order (webhook/flags.h); parse_args acts on each. */
static const struct flag render_flag_table[] = {
    {'f', "filename", 'f', required_argument, "JOB",
     "Volcano Job, YAML or JSON (required; repeatable, each file\n"
     "once); every Job of a multi-document file or of a List\n"
     "(kubectl get -o yaml); - reads standard input",
     NULL},
    {OPT_POD, "pod", 0, required_argument, "POD",
     "mutate this pod (YAML or JSON) instead of the Job's own pods", NULL},
    {OPT_TASK, "task", 0, required_argument, "NAME",
     "only the pod --index of this task, built as Volcano's\n"
     "controller builds it (any pod of a Job too large to render\n"
     "whole)",
     NULL},
    {OPT_INDEX, "index", 0, required_argument, "N", "with --task: the pod's index, 0 to replicas-1",
     "0"},
    {OPT_REVIEW, "review", 0, required_argument, "REVIEW",
     "print the AdmissionReview response serve would send\n"
     "(a denial also exits 1)",
     NULL},
    {OPT_NAMESPACE, "namespace", 0, required_argument, "NS",
     "namespace when the Job or pod has none, a DNS-1123 label\n"
     "(not with --review: the review names it)",
     "\"default\""},
    /* kubectl's short spelling of --namespace, kept out of --help */
    {'n', NULL, 'n', required_argument, NULL, NULL, NULL},
    {'o', "output", 'o', required_argument, "FORMAT",
     "pod (default): mutated pods, JSON; yaml: the same as YAML;\n"
     "patch: the JSON Patch ops of each pod, with its name,\n"
     "namespace and Job (with --pod or --task: the ops alone)\n"
     "(not with --review)",
     NULL},
    {OPT_STRICT, "strict", 0, no_argument, NULL,
     "exit 1 when a Job has any diagnostic (what the Job webhook\n"
     "warns of: printed on stderr either way), to lint in CI",
     NULL},
    {'h', "help", 'h', no_argument, NULL, "this help", NULL},
};

static const struct flag_set render_flags = {
    .command = "render",
    .flags = render_flag_table,
    .nflags = sizeof(render_flag_table) / sizeof(render_flag_table[0]),
    .help_column = 23,
    .short_column = true,
    .usage = "usage: " WH_PROG " render -f JOB [--namespace NS] [-o pod|yaml|patch]\n"
             "       " WH_PROG " render -f JOB --pod POD [--namespace NS] [-o pod|yaml|patch]\n"
             "       " WH_PROG " render -f JOB --task NAME [--index N] [--namespace NS]\n"
             "                                   [-o pod|yaml|patch]\n"
             "       " WH_PROG " render -f JOB --review REVIEW\n"
             "\n"
             "Shows what the Volcano job plugins do, with the same code path as `serve`:\n"
             "every pod of the Jobs (at most " RENDER_MAX_PODS_TEXT " in all), one pod of the "
             "Job (--task), a\n"
             "pod of yours (--pod), or the answer to an AdmissionReview (--review).\n",
};

/* s as one printable line for a message, cut to fit buf: it is the user's text. */
static const char *shown(char *buf, size_t cap, const char *s)
{
    return sanitize_copy(buf, cap, s, cap - 1, SANITIZE_CONTROLS);
}

/* What the API server would reject or Volcano would silently ignore: say so. */
static void warn_job_shape(const char *path, const json_t *job)
{
    const json_t *tasks = job_tasks(job);
    size_t i;
    const json_t *task;

    if (json_array_size(tasks) == 0)
        render_err("warning: %s: job has no spec.tasks, so no pods", path);
    json_array_foreach(tasks, i, task) {
        const json_t *replicas = json_object_get(task, "replicas");

        if (job_task_name(task)[0] == '\0')
            render_err("warning: %s: spec.tasks[%zu] has no name", path, i);
        if (replicas != NULL && !json_is_integer(replicas))
            render_err("warning: %s: spec.tasks[%zu].replicas is not an integer, taken as 0", path,
                       i);
    }
}

/* One document of -f must be a Volcano Job with a name. where names it in messages
 * (the path, or "path: document N"). @return 0, or 1 after the message. */
static int check_job(const char *where, const json_t *job)
{
    const char *kind = json_string_value(json_object_get(job, "kind"));
    const char *api = json_string_value(json_object_get(job, "apiVersion"));
    const json_t *task;
    size_t i;

    if (!json_is_object(job)) {
        render_err("%s: not a Job object", where);
        return 1;
    }
    if (kind == NULL || strcmp(kind, "Job") != 0 || api == NULL
        || strcmp(api, "batch.volcano.sh/v1alpha1") != 0) {
        render_err("%s: not a batch.volcano.sh/v1alpha1 Job (apiVersion %s, kind %s)", where,
                   api ? api : "missing", kind ? kind : "missing");
        return 1;
    }
    if (job_name(job)[0] == '\0') {
        render_err("%s: job has no metadata.name", where);
        return 1;
    }
    if (json_object_get(json_object_get(job, "spec"), "tasks") != NULL && job_tasks(job) == NULL) {
        render_err("%s: spec.tasks is not a list", where);
        return 1;
    }
    json_array_each(job_tasks(job), i, task) {
        char name[64];

        /* Volcano's job admission: "'replicas' < 0 in task: NAME" */
        if (job_task_replicas(task) < 0) {
            render_err("%s: task \"%s\" (spec.tasks[%zu]) has replicas %" PRId64
                       ", which Volcano's job admission refuses (want 0 or more)",
                       where, shown(name, sizeof(name), job_task_name(task)), i,
                       job_task_replicas(task));
            return 1;
        }
    }
    warn_job_shape(where, job);
    return 0;
}

/* Check one Job document and append it to jobs. @return 0, or 1 after the message. */
static int add_job(json_t *jobs, const char *where, json_t *doc)
{
    if (check_job(where, doc) != 0)
        return 1;
    if (json_array_append(jobs, doc) < 0) {
        render_err("out of memory");
        return 1;
    }
    return 0;
}

/* A list of objects as `kubectl get -o yaml` prints one (v1 List) or the API lists
 * Jobs (batch.volcano.sh/v1alpha1 JobList). */
static bool is_list(const json_t *doc)
{
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    const char *api = json_string_value(json_object_get(doc, "apiVersion"));

    return kind != NULL && api != NULL
        && ((strcmp(kind, "List") == 0 && strcmp(api, "v1") == 0)
            || (strcmp(kind, "JobList") == 0 && strcmp(api, "batch.volcano.sh/v1alpha1") == 0));
}

/* A key written twice in one mapping: the reader keeps the last value silently (as
 * sigs.k8s.io/yaml, kubectl's), but the author may have meant the first. */
#define RENDER_MAX_DUP_WARNINGS 20 /* then one line says how many more */

static void warn_duplicates(const char *path, const json_t *dups)
{
    const json_t *d;
    size_t i;

    json_array_foreach(dups, i, d) {
        char key[64];
        char field[256];

        if (i == RENDER_MAX_DUP_WARNINGS) {
            render_err("warning: %s: %zu more repeated keys not shown", path,
                       json_array_size(dups) - i);
            break;
        }

        render_err("warning: %s: line %" JSON_INTEGER_FORMAT ": repeated key \"%s\" (%s); the "
                   "last value is kept, as kubectl's YAML reader keeps it",
                   path, json_integer_value(json_object_get(d, "line")),
                   shown(key, sizeof(key), json_string_value(json_object_get(d, "key"))),
                   shown(field, sizeof(field), json_string_value(json_object_get(d, "path"))));
    }
}

/* The first document of path, which must be an object (what names it in the message),
 * into *out (new reference); every document is read, for syntax errors and repeated
 * keys, as for -f. @return 0, or 1 after the message. */
static int load_object(const char *path, const char *what, json_t **out)
{
    struct wh_error err;
    json_t *docs = NULL;
    json_t *dups = NULL;
    int rc;

    *out = NULL;
    wh_error_clear(&err);
    rc = yaml_load_file_documents(path, &docs, &dups, &err);
    if (rc < 0) {
        render_err("%s: %s", path, err.msg[0] ? err.msg : wh_error_str(rc));
        return 1;
    }
    warn_duplicates(path, dups);
    json_decref(dups);
    if (!json_is_object(json_array_get(docs, 0))) {
        render_err("%s: not a %s object", path, what);
        json_decref(docs);
        return 1;
    }
    *out = json_incref(json_array_get(docs, 0));
    json_decref(docs);
    return 0;
}

/*
 * Append the Jobs of one -f (path "-": standard input) to jobs: every document of
 * a multi-document file, as kubectl reads one, and every item of a List; empty
 * documents are skipped. @return 0 when at least one Job was added, or 1 after
 * the message.
 */
static int load_jobs(const char *path, json_t *jobs)
{
    struct wh_error err;
    json_t *docs = NULL;
    json_t *dups = NULL;
    json_t *doc;
    size_t before = json_array_size(jobs);
    size_t i;
    int rc;

    wh_error_clear(&err);
    rc = yaml_load_file_documents(path, &docs, &dups, &err);
    if (rc < 0) {
        render_err("%s: %s", path, err.msg[0] ? err.msg : wh_error_str(rc));
        return 1;
    }
    warn_duplicates(path, dups);
    json_decref(dups);
    rc = 0;
    json_array_foreach(docs, i, doc) {
        char where[PATH_MAX + 64];
        int n;

        if (json_is_null(doc))
            continue;
        if (json_array_size(docs) > 1)
            n = snprintf(where, sizeof(where), "%s: document %zu", path, i + 1);
        else
            n = snprintf(where, sizeof(where), "%s", path);
        if (is_list(doc)) {
            const json_t *items = json_object_get(doc, "items");
            json_t *item;
            size_t k;

            if (items != NULL && !json_is_null(items) && !json_is_array(items)) {
                render_err("%s: items is not a list", where);
                rc = 1;
                break;
            }
            json_array_foreach(items, k, item) {
                snprintf(where + n, sizeof(where) - (size_t)n, ": items[%zu]", k);
                rc = add_job(jobs, where, item);
                if (rc != 0)
                    break;
            }
        } else {
            rc = add_job(jobs, where, doc);
        }
        if (rc != 0)
            break;
    }
    if (rc == 0 && json_array_size(jobs) == before) {
        if (json_array_size(docs) == 1 && is_list(json_array_get(docs, 0)))
            render_err("%s: a List with no items: no Job to render", path);
        else
            render_err("%s: not a Job object", path);
        rc = 1;
    }
    json_decref(docs);
    return rc;
}

/* --pod: a Pod with a spec; a Volcano controller reference, if any, must name -f's Job. */
static int load_pod(const char *path, const json_t *job, json_t **out)
{
    const char *kind;
    const char *owner = NULL;
    const char *owner_uid = NULL;

    if (load_object(path, "Pod", out) != 0)
        return 1;
    kind = json_string_value(json_object_get(*out, "kind"));
    if (kind == NULL || strcmp(kind, "Pod") != 0) {
        render_err("%s: not a Pod (kind %s)", path, kind ? kind : "missing");
        goto bad;
    }
    if (!json_is_object(json_object_get(*out, "spec"))) {
        render_err("%s: pod has no spec", path);
        goto bad;
    }
    if (mutate_pod_owner(*out, &owner, &owner_uid) == 0 && strcmp(owner, job_name(job)) != 0) {
        render_err("%s: pod belongs to job %s, not to %s", path, owner, job_name(job));
        goto bad;
    }
    return 0;
bad:
    json_decref(*out);
    *out = NULL;
    return 1;
}

/*
 * A hand-written --pod often lacks what Volcano's controller sets: without the
 * volcano.sh/task-spec annotation its task is "default" (as in Volcano), and a task
 * the Job does not have gets no task-specific values (RANK, the task index, ...).
 */
static void warn_pod_task(const char *path, const json_t *job, const json_t *pod)
{
    const char *task = json_string_value(json_object_get(
        json_object_get(json_object_get(pod, "metadata"), "annotations"), "volcano.sh/task-spec"));
    bool given = task != NULL && task[0] != '\0';
    char text[64];

    if (!given)
        task = "default";
    if (job_find_task(job, task) != NULL)
        return;
    /* The annotation is the user's text: one line, printable, short. */
    render_err("warning: %s: task \"%s\" (%s) is not a task of job %s, so the plugins set "
               "nothing task-specific",
               path, shown(text, sizeof(text), task),
               given ? "the volcano.sh/task-spec annotation" : "no volcano.sh/task-spec annotation",
               job_name(job));
}

static void print_warnings(const char *pod, const struct warnings *w)
{
    for (size_t i = 0; i < w->n; i++)
        render_err("warning: pod %s: %s", pod, w->items[i]);
}

static int print_json(json_t *v)
{
    int rc = json_dumpf(v, stdout, JSON_INDENT(2)) == 0 ? 0 : 1;

    fputc('\n', stdout);
    return rc;
}

/* v on stdout as out asks: YAML for -o yaml, else JSON. @return 0, or 1 after the message. */
static int print_output(const json_t *v, enum output out)
{
    struct wh_error err;
    char *text = NULL;
    size_t len = 0;
    int rc;

    if (out != OUTPUT_YAML)
        return print_json((json_t *)v);
    wh_error_clear(&err);
    rc = yaml_dump_buffer(v, &text, &len, &err);
    if (rc < 0) {
        render_err("%s", err.msg);
        return 1;
    }
    rc = fwrite(text, 1, len, stdout) == len ? 0 : 1;
    free(text);
    return rc;
}

/* Mutate one pod; on success *item_out is the pod, or for -o patch
 * {"pod": name, "namespace": ns, "job": the Job's name, "patch": [ops]}. */
static int render_pod(const json_t *job, const json_t *pod, const char *ns, enum output out,
                      json_t **item_out)
{
    struct mutate_result r;
    const char *name = json_string_value(json_object_get(json_object_get(pod, "metadata"), "name"));
    int rc = 0;

    if (name == NULL)
        name = "(generateName)";
    mutate_result_init(&r);
    mutate_pod_with_job(job, pod, ns, &r);
    print_warnings(name, &r.warnings);
    if (!r.allowed) {
        render_err("pod %s denied (code %d): %s", name, r.status_code, r.message);
        rc = 1;
    } else if (out != OUTPUT_PATCH) {
        *item_out = json_incref(r.pod);
    } else {
        json_t *ops = r.patch != NULL ? json_incref(r.patch) : json_array();

        /* which pod of which Job, as `kubectl get` names it: a List may mix namespaces */
        *item_out = json_pack("{s:s, s:s, s:s, s:o}", "pod", name, "namespace", ns, "job",
                              job_name(job), "patch", ops);
    }
    mutate_result_dispose(&r);
    if (rc == 0 && *item_out == NULL) {
        render_err("out of memory");
        rc = 1;
    }
    return rc;
}

/* Whether the Jobs have more than RENDER_MAX_PODS pods, counted without overflow. */
static bool too_many_pods(const json_t *jobs)
{
    const json_t *job;
    size_t j;
    int64_t pods = 0;

    json_array_foreach(jobs, j, job) {
        const json_t *task;
        size_t t;

        json_array_each(job_tasks(job), t, task) {
            if (job_task_replicas(task) <= 0)
                continue;
            pods += job_task_replicas(task) < RENDER_MAX_PODS ? job_task_replicas(task)
                                                              : RENDER_MAX_PODS + 1;
            if (pods > RENDER_MAX_PODS)
                return true;
        }
    }
    return false;
}

/* Every pod of every Job in jobs, as one List (pod, yaml) or one array (patch). */
static int render_job_pods(json_t *jobs, enum output out)
{
    json_t *items = NULL;
    json_t *list = NULL;
    json_t *job;
    size_t j;
    int rc = 0;

    if (too_many_pods(jobs)) {
        render_err("the Jobs have more than %d pods; render prints at most that many (--task "
                   "NAME --index N renders one)",
                   RENDER_MAX_PODS);
        return 1;
    }
    items = json_array();
    if (items == NULL) {
        render_err("out of memory");
        return 1;
    }

    json_array_foreach(jobs, j, job) {
        const json_t *task;
        size_t t;

        json_array_each(job_tasks(job), t, task) {
            for (int64_t i = 0; i < job_task_replicas(task) && rc == 0; i++) {
                json_t *pod = jobpods_build(job, task, i);
                json_t *item = NULL;

                if (pod == NULL) {
                    render_err("out of memory");
                    rc = 1;
                    break;
                }
                rc = render_pod(job, pod, job_namespace(job), out, &item);
                json_decref(pod);
                if (rc == 0 && json_array_append_new(items, item) < 0) {
                    render_err("out of memory");
                    rc = 1;
                }
            }
        }
        if (rc != 0)
            break;
    }
    if (rc == 0) {
        if (out != OUTPUT_PATCH)
            list = json_pack("{s:s, s:s, s:{}, s:O}", "apiVersion", "v1", "kind", "List",
                             "metadata", "items", items);
        else
            list = json_incref(items);
        rc = print_output(list, out);
    }
    json_decref(list);
    json_decref(items);
    return rc;
}

struct file_job {
    const json_t *job;
};

/* job_source over the -f Job: found when the name matches and the namespace fits. */
static int file_job_get(void *userdata, const char *ns, const char *name, const char *uid,
                        json_t **job_out, struct wh_error *err)
{
    const struct file_job *fj = userdata;

    (void)uid; /* the file is the truth; mutate_review compares the uid itself */
    const char *jns = job_namespace(fj->job);
    json_t *copy;

    if (strcmp(job_name(fj->job), name) != 0 || (jns[0] != '\0' && strcmp(jns, ns) != 0))
        return wh_error_set(err, WH_ENOTFOUND, "jobs.batch.volcano.sh \"%s\" not found", name);
    copy = json_deep_copy(fj->job);
    if (copy == NULL)
        return WH_ENOMEM;
    if (jns[0] == '\0')
        json_object_set_new(json_object_get(copy, "metadata"), "namespace", json_string(ns));
    *job_out = copy;
    return 0;
}

/*
 * A denial in the answer (out_len bytes at out) is said on stderr as render says a
 * denied pod: "PATH: pod denied (code N): MESSAGE". @return 1 when it denies, else 0.
 */
static int review_denied(const char *path, const char *out, size_t out_len)
{
    json_t *answer = json_loadb(out, out_len, 0, NULL);
    const json_t *response = json_object_get(answer, "response");
    const json_t *status = json_object_get(response, "status");
    const char *msg = json_string_value(json_object_get(status, "message"));
    int rc = json_is_false(json_object_get(response, "allowed")) ? 1 : 0;

    if (rc == 1)
        render_err("%s: pod denied (code %d): %s", path,
                   (int)json_integer_value(json_object_get(status, "code")),
                   msg != NULL ? msg : "");
    json_decref(answer);
    return rc;
}

static int render_review(const json_t *job, const char *path)
{
    struct file_job fj = {.job = job};
    struct jobsource src = {.get = file_job_get, .userdata = &fj};
    struct mutate_options opt = {.lookup_failure = LOOKUP_FAILURE_DENY};
    bool from_stdin = strcmp(path, "-") == 0; /* as -f - and --pod - */
    FILE *f = from_stdin ? stdin : fopen(path, "rb");
    struct buf body;
    char *out = NULL;
    size_t out_len = 0;
    int status;
    int rc;

    if (f == NULL) {
        render_err("%s: cannot open: %s", path, strerror(errno));
        return 1;
    }
    buf_init(&body, REVIEW_MAX_BYTES);
    rc = buf_append_stream(&body, f);
    if (!from_stdin)
        fclose(f);
    if (rc < 0) {
        render_err("%s: %s", path,
                   rc == WH_ETOOBIG      ? "larger than 3 MiB"
                       : rc == WH_ENOMEM ? "out of memory"
                                         : strerror(errno));
        buf_dispose(&body);
        return 1;
    }
    if (json_string_value(json_object_get(json_object_get(job, "metadata"), "uid")) == NULL)
        render_err("warning: the Job has no metadata.uid, so the review's ownerReference uid "
                   "is not checked (serve answers \"not found\" when they differ)");
    status = admission_handle(buf_cstr(&body), body.len, &src, &opt, &out, &out_len);
    buf_dispose(&body);
    if (status != 200) {
        render_err("%s: HTTP %d: %.*s", path, status, (int)out_len, out ? out : "");
        free(out);
        return 1;
    }
    fwrite(out, 1, out_len, stdout);
    fputc('\n', stdout);
    rc = review_denied(path, out, out_len);
    free(out);
    return rc;
}

/* What the command line asks for. The strings point into argv. */
struct render_args {
    const char **job_paths; /* every -f, in order (owned array, borrowed strings) */
    size_t njob_paths;
    const char *pod_path;    /* --pod, or NULL */
    const char *review_path; /* --review, or NULL */
    const char *ns_flag;     /* --namespace, or NULL */
    const char *task;        /* --task: render pod --index of this task only, or NULL */
    int64_t index;           /* --index, 0 when not given */
    bool index_given;
    enum output out;
    bool out_given; /* -o was on the command line */
    bool help;      /* -h: print the help and exit 0 */
    bool strict;    /* --strict: any diagnostic makes the exit status 1 */
};

/* --index: a pod index as the webhook reads one from a pod name (job_parse_index),
 * below 2^31 - 1 (replicas is an int32). @return 0 or -1. */
static int parse_index(const char *s, int64_t *out)
{
    int64_t v;

    if (job_parse_index(s, &v) < 0 || v < 0 || v > RENDER_MAX_INDEX)
        return -1;
    *out = v;
    return 0;
}

/*
 * Read the flags into a (a->job_paths is the caller's to free, even on failure).
 * @return 0; 1 out of memory; 2 bad usage, after its one line.
 */
static int parse_args(struct render_args *a, int argc, char **argv)
{
    static const char *const outputs[] = {"pod", "yaml", "patch", NULL}; /* enum output */
    struct flags_parser p;
    const char *arg;
    int out;
    int c;

    memset(a, 0, sizeof(*a));
    a->out = OUTPUT_POD;
    /* at most one -f per argument */
    a->job_paths = calloc((size_t)argc, sizeof(*a->job_paths));
    if (a->job_paths == NULL) {
        render_err("out of memory");
        return 1;
    }
    if (flags_parser_init(&p, &render_flags) < 0) {
        render_err("bad flag table");
        return 1;
    }
    while ((c = flags_next(&p, argc, argv, &arg, stderr)) != -1) {
        switch (c) {
        case 'f': a->job_paths[a->njob_paths++] = arg; break;
        case OPT_POD: a->pod_path = arg; break;
        case OPT_REVIEW: a->review_path = arg; break;
        case 'n':
        case OPT_NAMESPACE: a->ns_flag = arg; break;
        case OPT_TASK: a->task = arg; break;
        case OPT_STRICT: a->strict = true; break;
        case OPT_INDEX:
            a->index_given = true;
            if (parse_index(arg, &a->index) < 0) {
                flags_bad_value(&render_flags, stderr, "--index", arg,
                                "want a pod index, 0 to " FLAGS_STR(RENDER_MAX_INDEX));
                return 2;
            }
            break;
        case 'o':
            a->out_given = true;
            if (flags_parse_enum(arg, outputs, &out) < 0) {
                flags_usage_error(&render_flags, stderr,
                                  "--output must be pod, yaml or patch, not \"%s\"", arg);
                return 2;
            }
            a->out = (enum output)out;
            break;
        case 'h': a->help = true; return 0;
        default: return 2; /* flags_next told it */
        }
    }
    return flags_no_arguments(&p, argc, argv, stderr) < 0 ? 2 : 0;
}

/* A DNS-1123 label, as the API server validates a namespace name: 1-63 of [a-z0-9-],
 * a letter or digit at both ends. */
static bool dns_label(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
            return false;
    return true;
}

/* Whether two -f name the same file: the same text, or the same inode (a link, "./",
 * or standard input redirected from it). */
static bool same_file(const char *p, const char *q)
{
    struct stat sp, sq;

    if (strcmp(p, q) == 0)
        return true;
    if ((strcmp(p, "-") == 0 ? fstat(STDIN_FILENO, &sp) : stat(p, &sp)) != 0
        || (strcmp(q, "-") == 0 ? fstat(STDIN_FILENO, &sq) : stat(q, &sq)) != 0)
        return false; /* load_jobs names the file it cannot read */
    /* a pipe or terminal on stdin is no file given twice */
    return S_ISREG(sp.st_mode) && sp.st_dev == sq.st_dev && sp.st_ino == sq.st_ino;
}

/* Flags that do not go together, and values the API server would refuse.
 * @return 0, or 2 after the usage line. */
static int check_args(const struct render_args *a)
{
    size_t stdin_uses = (a->pod_path != NULL && strcmp(a->pod_path, "-") == 0)
        + (a->review_path != NULL && strcmp(a->review_path, "-") == 0);

    for (size_t k = 0, stdin_seen = 0; k < a->njob_paths; k++)
        if (strcmp(a->job_paths[k], "-") == 0 && stdin_seen++ > 0) {
            render_err("-f - (standard input) can be given once");
            return 2;
        } else if (strcmp(a->job_paths[k], "-") == 0) {
            stdin_uses++;
        }
    if (stdin_uses > 1) {
        render_err("standard input (-) can be read once: give the Job or the pod as a file");
        return 2;
    }
    /* each of its Jobs would render twice, pods of the same names */
    for (size_t k = 1; k < a->njob_paths; k++)
        for (size_t i = 0; i < k; i++)
            if (strcmp(a->job_paths[k], "-") != 0 || strcmp(a->job_paths[i], "-") != 0)
                if (same_file(a->job_paths[i], a->job_paths[k])) {
                    if (strcmp(a->job_paths[i], a->job_paths[k]) == 0)
                        render_err("-f %s is given twice", a->job_paths[k]);
                    else
                        render_err("-f %s and -f %s are the same file", a->job_paths[i],
                                   a->job_paths[k]);
                    return 2;
                }
    if (a->njob_paths == 0) {
        render_err("missing required flag -f JOB (see --help)");
        return 2;
    }
    if (a->pod_path != NULL && a->review_path != NULL) {
        render_err("--pod and --review cannot be used together");
        return 2;
    }
    if (a->review_path != NULL && a->out_given) {
        render_err("--output does not apply to --review (it prints the AdmissionReview)");
        return 2;
    }
    if (a->review_path != NULL && a->ns_flag != NULL) {
        render_err("--namespace does not apply to --review (its request.namespace is the pod's)");
        return 2;
    }
    if (a->task != NULL && (a->pod_path != NULL || a->review_path != NULL)) {
        render_err("--task cannot be used with %s", a->pod_path != NULL ? "--pod" : "--review");
        return 2;
    }
    if (a->index_given && a->task == NULL) {
        render_err("--index needs --task NAME");
        return 2;
    }
    if (a->ns_flag != NULL && !dns_label(a->ns_flag)) {
        render_err("invalid --namespace \"%s\": want a DNS-1123 label (1 to 63 of a-z, 0-9 "
                   "and '-', a letter or digit at both ends)",
                   a->ns_flag);
        return 2;
    }
    return 0;
}

/* The Jobs of every -f, in order, into jobs; --pod, --task and --review take one.
 * @return 0, or 1 after the message. */
/* Each Job once: the same namespace/name twice would render pods of the same names.
 * @return 0, or 1 after the message. */
static int check_jobs_once(const json_t *jobs, const char *ns_flag)
{
    json_t *seen = json_object();
    const json_t *job;
    size_t j;
    int rc = 0;

    if (seen == NULL) {
        render_err("out of memory");
        return 1;
    }
    json_array_foreach(jobs, j, job) {
        const char *ns = job_namespace(job)[0] != '\0' ? job_namespace(job)
            : ns_flag != NULL                          ? ns_flag
                                                       : "default";
        char key[512];

        snprintf(key, sizeof(key), "%s/%s", ns, job_name(job));
        if (json_object_get(seen, key) != NULL) {
            render_err("job %s is given twice: its pods would be rendered twice", key);
            rc = 1;
            break;
        }
        if (json_object_set_new(seen, key, json_true()) < 0) {
            render_err("out of memory");
            rc = 1;
            break;
        }
    }
    json_decref(seen);
    return rc;
}

static int load_all_jobs(const struct render_args *a, json_t *jobs)
{
    for (size_t k = 0; k < a->njob_paths; k++)
        if (load_jobs(a->job_paths[k], jobs) != 0)
            return 1;
    if (check_jobs_once(jobs, a->ns_flag) != 0)
        return 1;
    if ((a->pod_path != NULL || a->review_path != NULL || a->task != NULL)
        && json_array_size(jobs) > 1) {
        const char *flag = a->pod_path != NULL ? "--pod"
            : a->review_path != NULL           ? "--review"
                                               : "--task";

        if (a->njob_paths == 1)
            render_err("%s: holds %zu Jobs; %s takes a file with one", a->job_paths[0],
                       json_array_size(jobs), flag);
        else
            render_err("the -f files hold %zu Jobs; %s takes one", json_array_size(jobs), flag);
        return 1;
    }
    return 0;
}

/* --pod: that pod, mutated with job (a writable copy). @return the exit status. */
static int render_given_pod(json_t *job, const char *pod_path, const char *ns_flag, enum output out)
{
    const char *ns = ns_flag;
    json_t *pod = NULL;
    json_t *item = NULL;
    int rc;

    if (load_pod(pod_path, job, &pod) != 0)
        return 1;
    warn_pod_task(pod_path, job, pod);
    if (ns == NULL)
        ns = json_string_value(json_object_get(json_object_get(pod, "metadata"), "namespace"));
    if (ns == NULL || ns[0] == '\0')
        ns = job_namespace(job)[0] ? job_namespace(job) : "default";
    rc = jobpods_complete_job(job, ns) < 0 ? 1 : 0;
    if (rc == 0)
        rc = render_pod(job, pod, ns, out, &item);
    if (rc == 0)
        rc = print_output(out != OUTPUT_PATCH ? item : json_object_get(item, "patch"), out);
    json_decref(item);
    json_decref(pod);
    return rc;
}

/* --task NAME --index N: that one pod of job (a writable copy), built as Volcano's
 * controller builds it, mutated; printed as --pod prints one. @return the exit status. */
static int render_task_pod(json_t *job, const char *where, const char *task_name, int64_t index,
                           const char *ns_flag, enum output out)
{
    const json_t *task = job_find_task(job, task_name);
    json_t *pod = NULL;
    json_t *item = NULL;
    char text[64];
    int rc;

    if (task == NULL) {
        render_err("%s: job %s has no task \"%s\"", where, job_name(job),
                   shown(text, sizeof(text), task_name));
        return 1;
    }
    if (index >= job_task_replicas(task)) {
        render_err("%s: task \"%s\" has %" PRId64 " replicas, so no pod of --index %" PRId64, where,
                   shown(text, sizeof(text), task_name), job_task_replicas(task), index);
        return 1;
    }
    if (jobpods_complete_job(job, ns_flag ? ns_flag : "default") < 0) {
        render_err("out of memory");
        return 1;
    }
    pod = jobpods_build(job, task, index);
    if (pod == NULL) {
        render_err("out of memory");
        return 1;
    }
    rc = render_pod(job, pod, job_namespace(job), out, &item);
    if (rc == 0)
        rc = print_output(out != OUTPUT_PATCH ? item : json_object_get(item, "patch"), out);
    json_decref(item);
    json_decref(pod);
    return rc;
}

/*
 * What the Job webhook would warn of (plugins/diagnose.h, D17), for every Job, on
 * stderr: "warning: job NS/NAME: MESSAGE". @return how many were printed.
 */
static size_t print_diagnostics(const json_t *jobs, const char *ns_flag)
{
    struct diagnostics *d = malloc(sizeof(*d)); /* ~40 KiB: not on the stack */
    const json_t *job;
    size_t j;
    size_t n = 0;

    if (d == NULL) {
        render_err("out of memory");
        return 1;
    }
    json_array_foreach(jobs, j, job) {
        const char *ns = job_namespace(job);
        char name[256];

        if (ns[0] == '\0')
            ns = ns_flag != NULL ? ns_flag : "default";
        shown(name, sizeof(name), job_name(job));
        if (diagnose_job(job, d) < 0) {
            render_err("warning: job %s/%s: out of memory checking it", ns, name);
            n++;
            continue;
        }
        for (size_t i = 0; i < d->n; i++)
            render_err("warning: job %s/%s: %s", ns, name, d->items[i].message);
        if (d->dropped > 0)
            render_err("warning: job %s/%s: %zu more diagnostics not shown", ns, name, d->dropped);
        n += d->n + d->dropped;
    }
    free(d);
    return n;
}

int render_main(int argc, char **argv)
{
    struct render_args a;
    json_t *jobs = NULL;
    json_t *job;
    size_t j;
    size_t ndiag = 0;
    int rc;

    /* A command's stderr is for its own messages: the admission path's info lines
     * (one per refused pod, as serve logs them) stay out; its warnings stay in. */
    log_set_level(LOG_LEVEL_WARN);
    rc = parse_args(&a, argc, argv);
    if (rc == 0 && a.help)
        flags_print_help(&render_flags, stdout);
    if (rc != 0 || a.help)
        goto out;
    rc = check_args(&a);
    if (rc != 0)
        goto out;
    rc = 1;
    jobs = json_array();
    if (jobs == NULL) {
        render_err("out of memory");
        goto out;
    }
    if (load_all_jobs(&a, jobs) != 0)
        goto out;
    ndiag = print_diagnostics(jobs, a.ns_flag);
    job = json_array_get(jobs, 0);
    if (a.review_path != NULL) {
        rc = render_review(job, a.review_path);
    } else if (a.pod_path != NULL) {
        rc = render_given_pod(job, a.pod_path, a.ns_flag, a.out);
    } else if (a.task != NULL) {
        rc = render_task_pod(job, a.job_paths[0], a.task, a.index, a.ns_flag, a.out);
    } else {
        json_array_foreach(jobs, j, job)
            if (jobpods_complete_job(job, a.ns_flag ? a.ns_flag : "default") < 0)
                goto out;
        rc = render_job_pods(jobs, a.out);
    }
    if (rc == 0 && a.strict && ndiag > 0) {
        render_err("%zu diagnostic%s (--strict)", ndiag, ndiag == 1 ? "" : "s");
        rc = 1;
    }
out:
    json_decref(jobs);
    free(a.job_paths);
    return rc;
}
