/* SPDX-License-Identifier: Apache-2.0 */
/*
 * main.c - subcommand dispatch. Global library setup happens here, once, before
 * any thread starts (curl_global_init, jansson hash seed, SIGPIPE ignored).
 */
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "base/sanitize.h"
#include "webhook/commands.h"
#include "webhook/version.h"

/* An argument as one printable line for a message (the terminal is the user's). */
static const char *shown(const char *arg)
{
    static char buf[128]; /* main's thread only */

    return sanitize_copy(buf, sizeof(buf), arg, sizeof(buf) - 4,
                         SANITIZE_CONTROLS | SANITIZE_ELLIPSIS);
}

static void usage(FILE *to)
{
    fprintf(to,
            "usage: " WH_PROG " COMMAND [flags]\n"
            "\n"
            "commands:\n"
            "  serve       run the HTTPS mutating admission webhook for Volcano Job pods\n"
            "  render      show what the plugins do to a Job's pods, offline\n"
            "  gen-certs   write a CA and a serving certificate for the webhook Service\n"
            "  version     print the version, the git commit and the build date\n"
            "\n"
            "'" WH_PROG " COMMAND --help' (or 'help COMMAND') lists the flags of a command.\n");
}

/* `version` takes no flags but --help. @return the exit status. */
static int version_main(int argc, char **argv)
{
    if (argc == 1) {
        /* "key: value" lines after the first, for people and for scripts alike */
        printf(WH_PROG " " WH_VERSION "\n"
                       "git: %s\n"
                       "commit: %s\n"
                       "built: %s\n",
               version_git, version_commit, version_build_date);
        return 0;
    }
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("usage: " WH_PROG " version\n\n"
               "Prints the release (" WH_VERSION "), then the `git describe` and the commit the\n"
               "binary was built from and its build date (RFC 3339 UTC), \"unknown\" when not\n"
               "known (built outside a git tree).\n");
        return 0;
    }
    fprintf(stderr, WH_PROG ": version: unexpected argument \"%s\" (see --help)\n", shown(argv[1]));
    return 2;
}

/* `help [COMMAND]`: the command list, or what `COMMAND --help` prints. @return the exit status. */
static int help_main(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*run)(int argc, char **argv);
    } commands[] = {
        {"serve", serve_main},
        {"render", render_main},
        {"gen-certs", gen_certs_main},
        {"version", version_main},
    };
    char help_flag[] = "--help";

    if (argc == 1) {
        usage(stdout);
        return 0;
    }
    if (argc > 2) {
        fprintf(stderr, WH_PROG ": help: unexpected argument \"%s\" (see --help)\n",
                shown(argv[2]));
        return 2;
    }
    if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0
        || strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(argv[1], commands[i].name) == 0) {
            char *sub[] = {argv[1], help_flag, NULL};

            return commands[i].run(2, sub);
        }
    fprintf(stderr, WH_PROG ": help: unknown command \"%s\" (see --help)\n", shown(argv[1]));
    return 2;
}

int main(int argc, char **argv)
{
    int rc;

    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    json_object_seed(0);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, WH_PROG ": curl_global_init failed\n");
        return 1;
    }
    if (strcmp(argv[1], "serve") == 0)
        rc = serve_main(argc - 1, argv + 1);
    else if (strcmp(argv[1], "render") == 0)
        rc = render_main(argc - 1, argv + 1);
    else if (strcmp(argv[1], "gen-certs") == 0)
        rc = gen_certs_main(argc - 1, argv + 1);
    else if (strcmp(argv[1], "version") == 0 || strcmp(argv[1], "--version") == 0)
        rc = version_main(argc - 1, argv + 1);
    else if (strcmp(argv[1], "help") == 0)
        rc = help_main(argc - 1, argv + 1);
    else if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        rc = 0;
    } else {
        fprintf(stderr, WH_PROG ": unknown command \"%s\" (see --help)\n", shown(argv[1]));
        rc = 2;
    }
    curl_global_cleanup();
    /* Output that did not reach its file (a full disk) is a failure: say so. A closed
     * pipe (`render | head`) is the reader's choice: still a failure, said by no one, as
     * a process killed by SIGPIPE would be. */
    if (fflush(stdout) != 0 || ferror(stdout)) {
        if (errno != EPIPE)
            fprintf(stderr, WH_PROG ": cannot write the output: %s\n",
                    errno != 0 ? strerror(errno) : "write error");
        if (rc == 0 || rc == 1)
            rc = 1;
    }
    return rc;
}
