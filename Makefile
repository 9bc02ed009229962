# volcano-plugin-webhook build.
#   make                      build/volcano-plugin-webhook
#   make test                 unit tests (Check) + integration tests (tests/run-integration)
#   make test SANITIZER=address|undefined|thread
#   make demo                 the README's first command
#   make image                the container image (needs a Docker engine)
PROG      := volcano-plugin-webhook
SANITIZER ?=
ifeq ($(SANITIZER),)
BUILD     ?= build
else
BUILD     ?= build/san-$(SANITIZER)
endif

CC        ?= cc
PKGS      := libmicrohttpd gnutls jansson libcurl openssl yaml-0.1
WARN      := -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
             -Wformat=2 -Wpointer-arith -Werror -Werror=deprecated-declarations
CFLAGS    ?= -O2 -g
CFLAGS    += -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE $(WARN) -I. \
             $(shell pkg-config --cflags $(PKGS))
LDLIBS    += $(shell pkg-config --libs $(PKGS)) -lpthread
ifneq ($(SANITIZER),)
CFLAGS    += -fsanitize=$(SANITIZER) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS   += -fsanitize=$(SANITIZER)
endif
# The server's allocator: mimalloc (Debian's libmimalloc2.0) takes malloc over for the
# whole process. Admission allocates a lot (jansson builds a tree per review) and glibc's
# malloc took ~30% of the server's CPU under load (bench/RESULTS.md). Only the
# binary links it; sanitizer builds keep their own allocator. `make ALLOCATOR=` links none.
ifeq ($(SANITIZER),)
ALLOCATOR ?= mimalloc
else
ALLOCATOR ?=
endif
# --no-as-needed: nothing calls mimalloc by name; it replaces malloc by being loaded first.
PROG_LIBS :=
ifneq ($(ALLOCATOR),)
PROG_LIBS := -Wl,--push-state,--no-as-needed -l$(ALLOCATOR) -Wl,--pop-state
endif
# Deferred (=): only the unit tests need Check, so `make` works without it (make demo).
CHECK_CFLAGS = $(shell pkg-config --cflags check)
CHECK_LIBS   = $(shell pkg-config --libs check)

# Build information (webhook/version.h): the git state of this tree, or "unknown" outside a
# git tree of its own (a source tarball, even one unpacked inside another repository).
# GIT_VERSION=... GIT_COMMIT=... override them (the image build does: its context has no
# .git). The build date is SOURCE_DATE_EPOCH's when set, else the time version.o is
# compiled. Only webhook/version.o embeds them, and it depends on a stamp rewritten only
# when they change: a new commit rebuilds that one object (and relinks).
VERSION_CHARS := A-Za-z0-9._+-
IN_GIT_TREE   := $(shell [ "$$(git rev-parse --show-toplevel 2>/dev/null)" = "$$(pwd -P)" ] && echo yes)
ifeq ($(origin GIT_VERSION),undefined)
GIT_VERSION   := $(if $(IN_GIT_TREE),$(shell git describe --always --dirty 2>/dev/null | tr -cd '$(VERSION_CHARS)'))
endif
ifeq ($(origin GIT_COMMIT),undefined)
GIT_COMMIT    := $(if $(IN_GIT_TREE),$(shell git rev-parse --short HEAD 2>/dev/null | tr -cd '$(VERSION_CHARS)'))
endif
VERSION_STAMP := $(BUILD)/version.stamp
VERSION_INFO  := $(or $(GIT_VERSION),unknown) $(or $(GIT_COMMIT),unknown) $(SOURCE_DATE_EPOCH)
ifeq ($(filter clean,$(MAKECMDGOALS)),)
$(shell mkdir -p $(BUILD) && { [ "$$(cat $(VERSION_STAMP) 2>/dev/null)" = '$(VERSION_INFO)' ] || printf '%s\n' '$(VERSION_INFO)' >$(VERSION_STAMP); })
endif
# Deferred (=): the date is taken when version.o is compiled, not at every make.
BUILD_DATE     = $(or $(shell date -u $(if $(SOURCE_DATE_EPOCH),-d @$(SOURCE_DATE_EPOCH)) +%Y-%m-%dT%H:%M:%SZ 2>/dev/null),unknown)
VERSION_DEFS   = -DWH_GIT_VERSION='"$(or $(GIT_VERSION),unknown)"' \
                 -DWH_GIT_COMMIT='"$(or $(GIT_COMMIT),unknown)"' -DWH_BUILD_DATE='"$(BUILD_DATE)"'

# The layers, lowest first: each folder includes only the folders before it
# (webhook/ -> controller/ -> plugins/ -> k8s/ | certs/ -> base/; scripts/check-layers).
LAYERS    := base k8s certs plugins controller webhook
LIB_SRCS  := $(sort $(foreach d,$(LAYERS),$(wildcard $(d)/*.c)))
LIB_SRCS  := $(filter-out webhook/main.c,$(LIB_SRCS))
LIB_OBJS  := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
# tests/<folder>/check_<file>.c: one Check runner per module, in its layer's folder.
TEST_SRCS := $(sort $(foreach d,$(LAYERS),$(wildcard tests/$(d)/check_*.c)))
TEST_BINS := $(TEST_SRCS:tests/%.c=$(BUILD)/tests/%)
HDRS      := $(foreach d,$(LAYERS),$(wildcard $(d)/*.h)) $(wildcard tests/*.h)

.PHONY: all test check layers format-check deps unit-test integration-test demo clean format lint bench fuzz fuzz-regress soak tsan-test image
all: $(BUILD)/$(PROG)

# -MMD -MP: each object depends on the headers it includes (the .d files make writes).
DEPFLAGS  := -MMD -MP
$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEPFLAGS) -c $< -o $@

# The one object with the build information (see VERSION_STAMP above).
$(BUILD)/obj/webhook/version.o: webhook/version.c $(VERSION_STAMP)
	@mkdir -p $(dir $@)
	@case '$(SOURCE_DATE_EPOCH)' in *[!0-9]*) echo "SOURCE_DATE_EPOCH must be whole seconds since 1970, not '$(SOURCE_DATE_EPOCH)'" >&2; exit 1;; esac
	@case '$(GIT_VERSION)$(GIT_COMMIT)' in *[!$(VERSION_CHARS)]*) echo "GIT_VERSION and GIT_COMMIT may hold only letters, digits and ._+-" >&2; exit 1;; esac
	$(CC) $(CFLAGS) $(VERSION_DEFS) $(DEPFLAGS) -c $< -o $@

$(BUILD)/libwebhook.a: $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/$(PROG): $(BUILD)/obj/webhook/main.o $(BUILD)/libwebhook.a
	$(CC) $(LDFLAGS) -o $@ $^ $(PROG_LIBS) $(LDLIBS)

$(BUILD)/tests/%: tests/%.c $(BUILD)/libwebhook.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEPFLAGS) $(CHECK_CFLAGS) -o $@ $< $(BUILD)/libwebhook.a $(LDFLAGS) $(LDLIBS) $(CHECK_LIBS)

-include $(LIB_OBJS:.o=.d) $(BUILD)/obj/webhook/main.d $(TEST_BINS:=.d)

# Unit tests: every tests/<folder>/check_*.c is its own Check runner.
unit-test: $(TEST_BINS)
	@BUILD=$(BUILD) tests/run-unit $(TEST_BINS)

# Integration tests: the real binary over HTTPS against the test API server.
integration-test: $(BUILD)/$(PROG)
	@BUILD=$(BUILD) SANITIZER=$(SANITIZER) tests/run-integration

# `make test` works on a fresh machine: install what is missing, then build and check
# in a second make (the first one may have parsed this file before pkg-config existed).
test: deps
	@$(MAKE) --no-print-directory check

check: layers format-check all unit-test integration-test fuzz-regress

# Every #include points down the layers (LAYERS above).
layers:
	@scripts/check-layers

# Replay the fuzz seed corpora and every saved crash once (seconds).
fuzz-regress:
	@tests/fuzz/run --regress

# Soak: 60 s of admissions and Job churn under valgrind memcheck; about 2 min.
soak: all
	@BUILD=$(BUILD) tests/soak.sh

# The threaded modules under ThreadSanitizer (stoppable thread, cache, informer, lookup,
# reconcile queue, leader election, metrics, server).
TSAN_SUITES := base/check_backoff controller/check_cache controller/check_informer \
               controller/check_lookup controller/check_reconcile k8s/check_leader \
               webhook/check_metrics webhook/check_server plugins/check_sshkeys
tsan-test:
	@$(MAKE) --no-print-directory SANITIZER=thread \
	    $(addprefix build/san-thread/tests/,$(TSAN_SUITES))
	@BUILD=build/san-thread tests/run-unit $(addprefix build/san-thread/tests/,$(TSAN_SUITES))

# libFuzzer for FUZZ_SECONDS (default 60) per harness; FUZZ_HARNESSES picks a subset.
fuzz:
	@tests/fuzz/run

deps:
	@scripts/install-deps

demo:
	@scripts/demo

# three replicas behind one address through a 10,000-pod burst (bench/RESULTS.md section)
.PHONY: bench-scale
bench-scale: all
	@/usr/bin/python3 bench/scale.py

bench: all
	@bench/run

# The container image (Dockerfile), named as manifests/base/kustomization.yaml's `images:`
# expects; needs a Docker engine (DOCKER=podman works too). The git information goes in
# as build arguments: the build context has no .git.
DOCKER    ?= docker
IMAGE     ?= $(PROG):$(shell sed -n 's/^\#define WH_VERSION *"\(.*\)"$$/\1/p' webhook/commands.h)
image:
	@command -v $(DOCKER) >/dev/null 2>&1 || { \
	    echo "make image: $(DOCKER) not found: install a Docker engine (or DOCKER=podman); no image built" >&2; exit 1; }
	@$(DOCKER) info >/dev/null 2>&1 || { \
	    echo "make image: no Docker engine answers ($(DOCKER) info failed: start it or set DOCKER_HOST); no image built" >&2; exit 1; }
	$(DOCKER) build --build-arg GIT_VERSION=$(or $(GIT_VERSION),unknown) \
	    --build-arg GIT_COMMIT=$(or $(GIT_COMMIT),unknown) \
	    $(if $(SOURCE_DATE_EPOCH),--build-arg SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH)) -t $(IMAGE) .

# Every C file of the project, formatted by .clang-format; `make check` fails on drift.
FORMAT_SRCS = $(LIB_SRCS) webhook/main.c $(HDRS) $(TEST_SRCS) $(wildcard bench/*.c) \
              $(wildcard tests/fuzz/*.c tests/fuzz/*.h)
format:
	clang-format -i $(FORMAT_SRCS)

format-check:
	@clang-format --dry-run -Werror $(FORMAT_SRCS) && echo "format: every C file as .clang-format says"

# jansson.h is included for its macros (json_*_foreach), which cppcheck must see.
lint:
	cppcheck --quiet --enable=warning,performance,portability --error-exitcode=1 \
	    --include=$(shell pkg-config --variable=includedir jansson)/jansson.h \
	    -I. $(LIB_SRCS) webhook/main.c

clean:
	rm -rf build
