# hutch: one plain GNU Makefile (STYLE.md §2). Variants are variables:
#   make                     build/hutch, build/libhutch.a
#   make SAN=address,undefined   sanitized build in build/san/
#   make check               install deps, build, run every test under prove
#   make check-v2            the cgroup v2 backend for real, in a qemu guest
#   make demo                install deps, build, show what hutch does
#   make lint | format | fuzz | fuzz-smoke | bench | clean

CC ?= cc
PKGS := libseccomp jansson libarchive libmicrohttpd nettle libcurl sqlite3
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -lseccomp -ljansson -larchive -lmicrohttpd -lnettle -lcurl -lsqlite3)

WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 \
	-Wformat-nonliteral -Wimplicit-fallthrough -Wswitch-enum -Wundef -Wvla -Wpointer-arith \
	-Wno-missing-field-initializers -Werror
# -Wno-format-truncation: fixed buffers (error messages, paths in the child
# after clone) truncate on purpose; path builders check the return value.
CFLAGS ?= -g -O2
PREFIX ?= /usr/local
BASE_CFLAGS := -std=gnu17 -D_GNU_SOURCE -DHUTCH_LIBEXECDIR='"$(PREFIX)/libexec/hutch"' $(WARN) -Iinclude -Isrc $(PKG_CFLAGS) -MMD -MP
LDLIBS := $(PKG_LIBS) -lm -lpthread

ifeq ($(SAN),)
BUILD := build
HARDEN := -D_FORTIFY_SOURCE=3 -fstack-protector-strong -fstack-clash-protection -fPIE
LDHARDEN := -pie -Wl,-z,relro,-z,now,-z,noexecstack
else
BUILD := build/san
CC := clang
CFLAGS := -g -O1 -fno-omit-frame-pointer
HARDEN := -fsanitize=$(SAN) -fno-sanitize-recover=all
LDHARDEN := -fsanitize=$(SAN)
endif
ifeq ($(COVERAGE),1)
HARDEN += --coverage
LDHARDEN += --coverage
endif

GCC_ONLY = $(if $(findstring clang,$(CC)),,-Wno-format-truncation)
ALL_CFLAGS = $(BASE_CFLAGS) $(GCC_ONLY) $(HARDEN) $(CFLAGS)

LIB_SRC := $(wildcard src/util/*.c src/sys/*.c src/cell/*.c src/run/*.c src/session/*.c src/api/*.c \
	src/agent/*.c)
# Two programs (src/cli/cli.h): hutch runs `run` and `session` with only
# libseccomp and jansson loaded (start-up is on every run's path); it execs
# hutch-full, which has every command and library, for the rest.
CLI_SRC := $(wildcard src/cli/*.c)
CLI_LEAN_SRC := src/cli/main.c src/cli/run.c src/cli/session.c src/cli/readfile.c src/cli/lean.c
CLI_FULL_SRC := $(filter-out src/cli/lean.c,$(CLI_SRC))
LEAN_PKGS := libseccomp jansson
LEAN_LIBS := $(shell pkg-config --libs $(LEAN_PKGS) 2>/dev/null || echo -lseccomp -ljansson) -lm -lpthread
# The zygote embeds CPython: only it links libpython (python3-embed).
ZYGOTE_SRC := $(wildcard src/zygote/*.c)
PY_CFLAGS := $(shell pkg-config --cflags python3-embed 2>/dev/null)
PY_LIBS := $(shell pkg-config --libs python3-embed 2>/dev/null || echo -lpython3.11)
UNIT_SRC := $(wildcard tests/unit/test-*.c)
FUZZ_TARGETS := $(patsubst fuzz/fuzz-%.c,%,$(wildcard fuzz/fuzz-*.c))

KERNELS := kernels/python.py kernels/bash.py kernels/node.js
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/src/session/kernel_src.o
ZYGOTE_OBJ := $(ZYGOTE_SRC:%.c=build/obj/%.o) build/obj/src/zygote/runner_src.o \
	build/obj/src/zygote/node_warm_src.o
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
CLI_LEAN_OBJ := $(CLI_LEAN_SRC:%.c=$(BUILD)/obj/%.o)
CLI_FULL_OBJ := $(CLI_FULL_SRC:%.c=$(BUILD)/obj/%.o)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
LIB := $(BUILD)/libhutch.a
HUTCH := $(BUILD)/hutch
HUTCH_FULL := $(BUILD)/hutch-full
ZYGOTE := $(BUILD)/hutch-zygote
PROBE := build/probe
REPLAY := $(BUILD)/fuzz-replay

.PHONY: all check check-unit check-v2 demo lint format fuzz fuzz-smoke bench clean deps install

all: $(HUTCH) $(HUTCH_FULL) $(ZYGOTE) $(LIB) $(BUILD)/hutch.pc $(PROBE) $(UNIT_BIN) $(REPLAY)

V ?= 0
Q := $(if $(filter 1,$(V)),,@)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

# The session kernels ride in the library (docs/kernels.md).
$(BUILD)/obj/src/session/kernel_src.o: src/session/kernel_src.S $(KERNELS)
	@mkdir -p $(dir $@)
	$(Q)$(CC) -c $< -o $@

$(LIB): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(Q)rm -f $@
	$(Q)ar rcs $@ $^

$(HUTCH): $(CLI_LEAN_OBJ) $(LIB)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDHARDEN) -o $@ $(CLI_LEAN_OBJ) $(LIB) $(LEAN_LIBS)

$(HUTCH_FULL): $(CLI_FULL_OBJ) $(LIB)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDHARDEN) -o $@ $(CLI_FULL_OBJ) $(LIB) $(LDLIBS)

# The zygote runs untrusted code under memory limits: never sanitized (ASan
# reserves terabytes of address space). Sanitized builds use a copy.
build/obj/src/zygote/%.o: src/zygote/%.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)gcc $(BASE_CFLAGS) -Wno-format-truncation $(PY_CFLAGS) -D_FORTIFY_SOURCE=3 -fstack-protector-strong -fPIE -g -O2 -c $< -o $@

build/obj/src/zygote/runner_src.o: src/zygote/runner_src.S kernels/zygote_runner.py
	@mkdir -p $(dir $@)
	$(Q)gcc -c $< -o $@

build/obj/src/zygote/node_warm_src.o: src/zygote/node_warm_src.S kernels/node_warm.js
	@mkdir -p $(dir $@)
	$(Q)gcc -c $< -o $@

ifeq ($(SAN),)
$(ZYGOTE): $(ZYGOTE_OBJ) $(LIB)
	@$(if $(Q),echo "  LD      $@")
	$(Q)gcc -pie -Wl,-z,relro,-z,now,-z,noexecstack -o $@ $(ZYGOTE_OBJ) $(LIB) $(LEAN_LIBS) $(PY_LIBS)
else
$(ZYGOTE): FORCE
	$(MAKE) SAN= build/hutch-zygote
	cp build/hutch-zygote $@
endif
FORCE:

$(BUILD)/hutch.pc: scripts/hutch.pc.in
	@mkdir -p $(dir $@)
	sed -e 's|@VERSION@|$(shell sed -n 's/^#define HUTCH_VERSION "\(.*\)"/\1/p' include/hutch.h)|' \
	    -e 's|@PREFIX@|$(PREFIX)|' $< > $@

# The in-sandbox probe: static and never sanitized (ASan reserves terabytes
# of address space, which memory limits refuse).
$(PROBE): tests/helpers/probe.c
	@mkdir -p $(dir $@)
	gcc -std=gnu17 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -static -o $@ $<

$(BUILD)/tests/%: tests/unit/%.c tests/tap.h $(LIB)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  TEST    $@")
	$(Q)$(CC) $(ALL_CFLAGS) -Itests $(LDHARDEN) -o $@ $< $(LIB) $(LDLIBS)

$(REPLAY): fuzz/replay.c $(wildcard fuzz/fuzz-*.c) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDHARDEN) -o $@ fuzz/replay.c $(wildcard fuzz/fuzz-*.c) $(LIB) $(LDLIBS)

PREFIX ?= /usr/local
install: $(HUTCH) $(HUTCH_FULL) $(ZYGOTE) $(LIB) $(BUILD)/hutch.pc
	install -D -m 0755 $(HUTCH) $(DESTDIR)$(PREFIX)/bin/hutch
	install -D -m 0755 $(HUTCH_FULL) $(DESTDIR)$(PREFIX)/libexec/hutch/hutch-full
	install -D -m 0755 $(ZYGOTE) $(DESTDIR)$(PREFIX)/libexec/hutch/hutch-zygote
	install -D -m 0644 $(LIB) $(DESTDIR)$(PREFIX)/lib/libhutch.a
	install -D -m 0644 include/hutch.h $(DESTDIR)$(PREFIX)/include/hutch.h
	install -D -m 0644 $(BUILD)/hutch.pc $(DESTDIR)$(PREFIX)/lib/pkgconfig/hutch.pc

deps:
	scripts/deps.sh

# Every test, under prove; ends with one "N passed, N failed" line.
check:
	HUTCH_DEPS_V2=1 scripts/deps.sh
	$(MAKE) all
	$(MAKE) SAN=address,undefined all
	scripts/check.sh

# Quick loop while developing: unit tests only, no deps step.
check-unit: all
	HUTCH_BUILD=$(BUILD) prove -f $(UNIT_BIN)

check-v2:
	HUTCH_DEPS_V2=1 scripts/deps.sh
	$(MAKE) all
	tests/v2/run.sh

demo: deps
	$(MAKE) all
	scripts/demo.sh

lint:
	clang-format --dry-run -Werror $(shell git ls-files '*.c' '*.h')
	cppcheck --std=c11 --enable=warning,performance,portability --inline-suppr \
		--error-exitcode=1 --suppress=missingIncludeSystem -D_GNU_SOURCE -Iinclude -Isrc \
		--quiet src tests/unit fuzz
	shellcheck $(shell git ls-files '*.sh') .ci/run
	scripts/tidy.sh

format:
	clang-format -i $(shell git ls-files '*.c' '*.h')

fuzz: build/obj/src/session/kernel_src.o
	@mkdir -p build/fuzz
	for t in $(FUZZ_TARGETS); do \
		clang -std=gnu17 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined \
			-Iinclude -Isrc -DHUTCH_FUZZ_MAIN $(PKG_CFLAGS) -o build/fuzz/$$t \
			fuzz/fuzz-$$t.c $(LIB_SRC) build/obj/src/session/kernel_src.o $(PKG_LIBS) \
			-lm -lpthread || exit 1; \
	done

fuzz-smoke: fuzz
	for t in $(FUZZ_TARGETS); do \
		mkdir -p build/fuzz/corpus-$$t; \
		build/fuzz/$$t -max_total_time=60 build/fuzz/corpus-$$t fuzz/corpus/$$t || exit 1; \
	done

# bench/run.sh: hutch's fast and cold paths beside bubblewrap, rlimits, plain python3
# and Docker (BENCH_N=20 for a quick look; `bench/run.sh soak N` for the leak soak).
BENCH_CLIENT := build/bench-client
$(BENCH_CLIENT): bench/client.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu17 -D_GNU_SOURCE $(WARN) -O2 $(shell pkg-config --cflags jansson 2>/dev/null) \
		-o $@ $< $(shell pkg-config --libs jansson 2>/dev/null || echo -ljansson) -lpthread

bench: deps all $(BENCH_CLIENT)
	bench/run.sh

clean:
	rm -rf build

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(ZYGOTE_OBJ:.o=.d)
