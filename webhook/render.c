/*
 * render.c - `render`: the admission code path without a server or cluster.
 *
 *   render -f JOB [--namespace NS] [-o pod|patch]     every pod of the Job, mutated
 *   render -f JOB --pod POD [--namespace NS] [-o pod|patch]
 *   render -f JOB --review REVIEW                     the AdmissionReview answer
 *
 * JOB may hold several Jobs ("---"-separated, or a List, as kubectl takes them),
 * and -f may be repeated: without --pod or --review every Job's pods are rendered,
 * in file order. "-" is stdin.
 *
 * Single-threaded. Output on stdout only on success; problems are one line on
 * stderr ("volcano-plugin-webhook: render: FILE: problem") and exit status 1; bad
 * usage is one line too, as for serve and gen-certs, and exits 2.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/sanitize.h"
#include "k8s/yaml.h"
#include "plugins/jobpods.h"
#include "plugins/jobutil.h"
#include "webhook/admission.h"
#include "webhook/commands.h"
#include "webhook/mutate.h"

#define REVIEW_MAX_BYTES (3u << 20) /* the server's body cap */

enum output { OUTPUT_POD, OUTPUT_PATCH };

/* One problem line on stderr: "volcano-plugin-webhook: render: " fmt "\n". */
__attribute__((format(printf, 1, 2))) static void render_err(const char *fmt, ...)
{
    va_list ap;

    fputs(WH_PROG ": render: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static void render_usage(FILE *to)
{
    fprintf(to,
            "usage: " WH_PROG " render -f JOB [--namespace NS] [-o pod|patch]\n"
            "       " WH_PROG " render -f JOB --pod POD [--namespace NS] [-o pod|patch]\n"
            "       " WH_PROG " render -f JOB --review REVIEW\n"
            "\n"
            "Shows what the Volcano job plugins do, with the same code path as `serve`.\n"
            "  -f, --filename JOB   Volcano Job, YAML or JSON (required, repeatable); every\n"
            "                       Job of a multi-document file or of a List (kubectl get\n"
            "                       -o yaml); - reads standard input\n"
            "      --pod POD        mutate this pod (YAML or JSON) instead of the Job's own pods\n"
            "      --review REVIEW  print the AdmissionReview response serve would send\n"
            "      --namespace NS   namespace when the Job or pod has none (default \"default\")\n"
            "  -o, --output FORMAT  pod (default): mutated pods; patch: the JSON Patch ops\n"
            "                       (not with --review)\n"
            "  -h, --help           this help\n");
}

static int load_object(const char *path, const char *what, json_t **out)
{
    struct wh_error err;
    int rc;

    wh_error_clear(&err);
    rc = yaml_load_file(path, out, &err);
    if (rc < 0) {
        render_err("%s: %s", path, err.msg[0] ? err.msg : wh_error_str(rc));
        return 1;
    }
    if (!json_is_object(*out)) {
        render_err("%s: not a %s object", path, what);
        json_decref(*out);
        *out = NULL;
        return 1;
    }
    return 0;
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
    json_t *doc;
    size_t before = json_array_size(jobs);
    size_t i;
    int rc;

    wh_error_clear(&err);
    rc = yaml_load_file_documents(path, &docs, &err);
    if (rc < 0) {
        render_err("%s: %s", path, err.msg[0] ? err.msg : wh_error_str(rc));
        return 1;
    }
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
    char shown[64];

    if (!given)
        task = "default";
    if (job_find_task(job, task) != NULL)
        return;
    /* The annotation is the user's text: one line, printable, short. */
    sanitize_copy(shown, sizeof(shown), task, sizeof(shown) - 1, SANITIZE_CONTROLS);
    render_err("warning: %s: task \"%s\" (%s) is not a task of job %s, so the plugins set "
               "nothing task-specific",
               path, shown,
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

/* Mutate one pod; on success *item_out is the pod or {"pod":name,"patch":[...]}. */
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
    } else if (out == OUTPUT_POD) {
        *item_out = json_incref(r.pod);
    } else {
        json_t *ops = r.patch != NULL ? json_incref(r.patch) : json_array();

        *item_out = json_pack("{s:s, s:o}", "pod", name, "patch", ops);
    }
    mutate_result_dispose(&r);
    if (rc == 0 && *item_out == NULL) {
        render_err("out of memory");
        rc = 1;
    }
    return rc;
}

/* The most pods render builds (it holds them all until it prints the List): a Job of
 * 2^31 replicas must be refused, not grow without end. */
#define RENDER_MAX_PODS 10000

/* Every pod of every Job in jobs, as one List (pod) or one array (patch). */
static int render_job_pods(json_t *jobs, enum output out)
{
    json_t *items = json_array();
    json_t *list = NULL;
    json_t *job;
    size_t j;
    int64_t pods = 0;
    int rc = items != NULL ? 0 : 1;

    json_array_foreach(jobs, j, job) {
        const json_t *task;
        size_t t;

        json_array_foreach(job_tasks(job), t, task)
            if (job_task_replicas(task) > 0)
                pods += job_task_replicas(task) < RENDER_MAX_PODS ? job_task_replicas(task)
                                                                  : RENDER_MAX_PODS + 1;
    }
    if (pods > RENDER_MAX_PODS) {
        render_err("the Jobs have more than %d pods; render prints at most that many (--pod "
                   "renders one)",
                   RENDER_MAX_PODS);
        json_decref(items);
        return 1;
    }

    json_array_foreach(jobs, j, job) {
        const json_t *task;
        size_t t;

        json_array_foreach(job_tasks(job), t, task) {
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
                if (rc == 0)
                    json_array_append_new(items, item);
            }
        }
        if (rc != 0)
            break;
    }
    if (rc == 0) {
        if (out == OUTPUT_POD)
            list = json_pack("{s:s, s:s, s:{}, s:O}", "apiVersion", "v1", "kind", "List",
                             "metadata", "items", items);
        else
            list = json_incref(items);
        rc = print_json(list);
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

static int render_review(const json_t *job, const char *path)
{
    struct file_job fj = {.job = job};
    struct job_source src = {.get = file_job_get, .userdata = &fj};
    struct mutate_options opt = {.lookup_failure = LOOKUP_FAILURE_DENY};
    FILE *f = fopen(path, "rb");
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
    free(out);
    return 0;
}

int render_main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"filename", required_argument, NULL, 'f'},
        {"pod", required_argument, NULL, 'p'},
        {"review", required_argument, NULL, 'r'},
        {"namespace", required_argument, NULL, 'n'},
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char **job_paths = NULL; /* every -f, in order */
    size_t njob_paths = 0;
    const char *pod_path = NULL, *review_path = NULL, *ns_flag = NULL;
    enum output out = OUTPUT_POD;
    bool out_given = false;
    json_t *jobs = NULL;
    json_t *job;
    json_t *pod = NULL;
    int c, rc = 1;

    opterr = 0;
    optind = 1;
    /* at most one -f per argument */
    job_paths = calloc((size_t)argc, sizeof(*job_paths));
    if (job_paths == NULL) {
        render_err("out of memory");
        return 1;
    }
    while ((c = getopt_long(argc, argv, ":f:o:n:h", opts, NULL)) != -1) {
        switch (c) {
        case 'f': job_paths[njob_paths++] = optarg; break;
        case 'p': pod_path = optarg; break;
        case 'r': review_path = optarg; break;
        case 'n': ns_flag = optarg; break;
        case 'o':
            out_given = true;
            if (strcmp(optarg, "pod") == 0)
                out = OUTPUT_POD;
            else if (strcmp(optarg, "patch") == 0)
                out = OUTPUT_PATCH;
            else {
                render_err("--output must be pod or patch, not \"%s\"", optarg);
                rc = 2;
                goto out;
            }
            break;
        case 'h':
            render_usage(stdout);
            rc = 0;
            goto out;
        case ':':
            render_err("flag %s needs a value", argv[optind - 1]);
            rc = 2;
            goto out;
        default:
            render_err("unknown flag %s (see --help)", argv[optind - 1]);
            rc = 2;
            goto out;
        }
    }
    if (optind < argc) {
        render_err("unexpected argument \"%s\"", argv[optind]);
        rc = 2;
        goto out;
    }
    for (size_t k = 0, stdin_seen = 0; k < njob_paths; k++)
        if (strcmp(job_paths[k], "-") == 0 && stdin_seen++ > 0) {
            render_err("-f - (standard input) can be given once");
            rc = 2;
            goto out;
        }
    if (njob_paths == 0) {
        render_err("missing required flag -f JOB (see --help)");
        rc = 2;
        goto out;
    }
    if (pod_path != NULL && review_path != NULL) {
        render_err("--pod and --review cannot be used together");
        rc = 2;
        goto out;
    }
    if (review_path != NULL && out_given) {
        render_err("--output does not apply to --review (it prints the AdmissionReview)");
        rc = 2;
        goto out;
    }
    jobs = json_array();
    if (jobs == NULL) {
        render_err("out of memory");
        goto out;
    }
    for (size_t k = 0; k < njob_paths; k++)
        if (load_jobs(job_paths[k], jobs) != 0)
            goto out;
    job = json_array_get(jobs, 0);
    if ((pod_path != NULL || review_path != NULL) && json_array_size(jobs) > 1) {
        if (njob_paths == 1)
            render_err("%s: holds %zu Jobs; %s takes a file with one", job_paths[0],
                       json_array_size(jobs), pod_path != NULL ? "--pod" : "--review");
        else
            render_err("the -f files hold %zu Jobs; %s takes one", json_array_size(jobs),
                       pod_path != NULL ? "--pod" : "--review");
        goto out;
    }
    if (review_path != NULL) {
        rc = render_review(job, review_path);
    } else if (pod_path != NULL) {
        const char *ns;
        json_t *item = NULL;

        if (load_pod(pod_path, job, &pod) != 0)
            goto out;
        warn_pod_task(pod_path, job, pod);
        ns = ns_flag;
        if (ns == NULL)
            ns = json_string_value(json_object_get(json_object_get(pod, "metadata"), "namespace"));
        if (ns == NULL || ns[0] == '\0')
            ns = job_namespace(job)[0] ? job_namespace(job) : "default";
        if (jobpods_complete_job(job, ns) < 0)
            goto out;
        rc = render_pod(job, pod, ns, out, &item);
        if (rc == 0)
            rc = print_json(out == OUTPUT_POD ? item : json_object_get(item, "patch"));
        json_decref(item);
    } else {
        size_t j;

        json_array_foreach(jobs, j, job)
            if (jobpods_complete_job(job, ns_flag ? ns_flag : "default") < 0)
                goto out;
        rc = render_job_pods(jobs, out);
    }
out:
    json_decref(pod);
    json_decref(jobs);
    free(job_paths);
    return rc;
}
