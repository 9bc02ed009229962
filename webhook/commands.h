/* SPDX-License-Identifier: Apache-2.0 */
/*
 * commands.h - the subcommands of the binary. Each takes the arguments after
 * its own name (argv[0] is the subcommand name, for getopt_long) and returns the
 * process exit status: 0 success, 1 failure, 2 bad usage.
 */
#ifndef WH_COMMANDS_H
#define WH_COMMANDS_H

#define WH_PROG    "volcano-plugin-webhook"
#define WH_VERSION "0.1.0"

/** `serve`: the HTTPS admission server (webhook/serve.c). */
int serve_main(int argc, char **argv);

/** `render`: offline mutation of a Job's pods, a pod or a review (webhook/render.c). */
int render_main(int argc, char **argv);

/** `gen-certs`: write a CA and a serving certificate (webhook/gen_certs.c). */
int gen_certs_main(int argc, char **argv);

#endif
