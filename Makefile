# forgex — GNU Makefile
#
#   make          build build/forgex (and build/toml-decode)
#   make test     build and run every test, suites in parallel (TEST_JOBS;
#                 see tests/README.md); ends with "N passed, N failed"
#   make san      the same under AddressSanitizer + UBSan (in build/san/)
#   make faults   the fault-injection suite with every step (kill -9, a full
#                 disk, a read-only folder at each; `make test` runs a few)
#   make fuzz     build the libFuzzer targets with clang (in build/fuzz/)
#   make demo     run the pipeline offline on examples/demo (replayed model)
#   make bench    run the benchmarks in bench/
#   make install  install the programs, forgex(1) and the shell completions
#                 under $(DESTDIR)$(PREFIX) (PREFIX defaults to /usr/local)
#   make clean
#
# Missing Debian packages are installed by scripts/deps.sh when pkg-config
# cannot find them.

BUILD ?= build
CC ?= cc
PKG_CONFIG ?= pkg-config
VERSION := 0.1.0

PKGS := libcurl jansson libgit2 libseccomp libpcre2-8 zlib libedit md4c
# What build/forgex itself links; commands needing more run in forgex-core
# (see src/cli/main.c). libedit (the session's line editor, src/cli/lineedit.c)
# and md4c (its Markdown, src/cli/markdown.c) are only in forgex-core: the
# session is a heavy command (see EDIT_PKGS).
LIGHT_PKGS := jansson libseccomp libpcre2-8
TEST_PKGS := cmocka

# Install what is missing before anything asks pkg-config (not for clean).
ifeq ($(filter clean,$(MAKECMDGOALS)),)
DEPS_GROUPS := build test
ifneq ($(filter fuzz,$(MAKECMDGOALS)),)
DEPS_GROUPS += fuzz
endif
DEPS_STATUS := $(shell sh scripts/deps.sh $(DEPS_GROUPS) >&2; echo $$?)
ifneq ($(DEPS_STATUS),0)
$(error build dependencies are missing and could not be installed (see above))
endif
endif

WARNINGS := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wstrict-prototypes \
	-Wmissing-prototypes -Wpointer-arith -Wvla -Wwrite-strings \
	-Wundef -Wcast-align -Wno-missing-field-initializers
CFLAGS ?= -O2 -g
ALL_CFLAGS := -std=c11 -D_GNU_SOURCE -DFX_VERSION='"$(VERSION)"' $(WARNINGS) \
	-Isrc -MMD -MP $(shell $(PKG_CONFIG) --cflags $(PKGS)) $(CFLAGS)
# libedit and md4c are linked only where the session's front is: forgex-core
# and the unit tests of src/cli/ (not toml-decode, mockllm or the other tests).
EDIT_PKGS := libedit md4c
LIBS := $(shell $(PKG_CONFIG) --libs $(filter-out $(EDIT_PKGS),$(PKGS))) -lm
EDIT_LIBS := $(shell $(PKG_CONFIG) --libs $(EDIT_PKGS))
LIGHT_LIBS := $(shell $(PKG_CONFIG) --libs $(LIGHT_PKGS)) -lm
TEST_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(TEST_PKGS)) -Itests
TEST_LIBS := $(shell $(PKG_CONFIG) --libs $(TEST_PKGS))

ifeq ($(SAN),1)
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
ALL_CFLAGS += $(SAN_FLAGS)
LDFLAGS += $(SAN_FLAGS)
endif

LIB_SRC := $(sort $(shell find src -name '*.c' ! -path 'src/cli/*'))
CLI_SRC := $(sort $(filter-out src/cli/main.c,$(wildcard src/cli/*.c)))
UNIT_SRC := $(sort $(wildcard tests/unit/*/*.c))
E2E_SRC := $(sort $(wildcard tests/e2e/*.c))
HELPER_SRC := $(sort $(wildcard tests/helpers/*.c))
MOCK_SRC := $(sort $(wildcard tests/mockllm/*.c))
FUZZ_SRC := $(sort $(wildcard tests/fuzz/*.c))

LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
HELPER_OBJ := $(HELPER_SRC:%.c=$(BUILD)/obj/%.o)
LIBFX := $(BUILD)/libforgex.a
LIBCLI := $(BUILD)/libforgex-cli.a

UNIT_BIN := $(UNIT_SRC:tests/%.c=$(BUILD)/tests/%)
E2E_BIN := $(E2E_SRC:tests/%.c=$(BUILD)/tests/%)
# Each fuzz target, built with $(CC) as a program replaying its corpus
# (tests/fuzz/replay/main.c); `make test` runs them like the suites.
FUZZ_BIN := $(FUZZ_SRC:tests/%.c=$(BUILD)/tests/%)
MOCK_BIN := $(if $(MOCK_SRC),$(BUILD)/mockllm)
PROGRAMS := $(BUILD)/forgex $(BUILD)/forgex-core $(BUILD)/toml-decode

.PHONY: all test san fuzz bench clean lint-banned demo install faults
.DELETE_ON_ERROR:
.SECONDARY:

all: $(PROGRAMS)

$(BUILD)/obj/%.o: %.c | lint-banned
	@mkdir -p $(@D)
	@echo '  CC      $<'
	@$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(BUILD)/obj/tests/%.o: ALL_CFLAGS += $(TEST_CFLAGS)

$(LIBFX): $(LIB_OBJ)
	@mkdir -p $(@D)
	@echo '  AR      $@'
	@rm -f $@ && ar rcs $@ $^

$(LIBCLI): $(CLI_OBJ)
	@mkdir -p $(@D)
	@echo '  AR      $@'
	@rm -f $@ && ar rcs $@ $^

$(BUILD)/obj/src/cli/main-launcher.o: src/cli/main.c | lint-banned
	@mkdir -p $(@D)
	@echo '  CC      $< (launcher)'
	@$(CC) $(ALL_CFLAGS) -DFX_LAUNCHER -c -o $@ $<

# The light launcher: links only $(LIGHT_PKGS); a link error here means a
# light command started to need a heavy library (mark it CLI_HEAVY).
$(BUILD)/forgex: $(BUILD)/obj/src/cli/main-launcher.o $(LIBCLI) $(LIBFX)
	@echo '  LINK    $@'
	@$(CC) $(LDFLAGS) -o $@ $^ $(LIGHT_LIBS)

$(BUILD)/forgex-core: $(BUILD)/obj/src/cli/main.o $(LIBCLI) $(LIBFX)
	@echo '  LINK    $@'
	@$(CC) $(LDFLAGS) -o $@ $^ $(LIBS) $(EDIT_LIBS)

$(BUILD)/toml-decode: $(BUILD)/obj/tests/toml/toml-decode.o $(LIBFX)
	@echo '  LINK    $@'
	@$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)

$(BUILD)/mockllm: $(MOCK_SRC:%.c=$(BUILD)/obj/%.o) $(LIBFX)
	@echo '  LINK    $@'
	@$(CC) $(LDFLAGS) -o $@ $^ $(LIBS) -lpthread

$(BUILD)/tests/%: $(BUILD)/obj/tests/%.o $(HELPER_OBJ) $(LIBFX)
	@mkdir -p $(@D)
	@echo '  LINK    $@'
	@$(CC) $(LDFLAGS) -o $@ $< $(HELPER_OBJ) $(LIBFX) $(LIBS) $(TEST_LIBS) -lpthread

$(BUILD)/tests/fuzz/%: $(BUILD)/obj/tests/fuzz/%.o $(BUILD)/obj/tests/fuzz/replay/main.o $(LIBFX)
	@mkdir -p $(@D)
	@echo '  LINK    $@'
	@$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)

# Unit tests of src/cli/ modules link the front's archive too.
$(BUILD)/tests/unit/cli/%: $(BUILD)/obj/tests/unit/cli/%.o $(HELPER_OBJ) $(LIBCLI) $(LIBFX)
	@mkdir -p $(@D)
	@echo '  LINK    $@'
	@$(CC) $(LDFLAGS) -o $@ $< $(HELPER_OBJ) $(LIBCLI) $(LIBFX) $(LIBS) $(EDIT_LIBS) $(TEST_LIBS) \
		-lutil -lpthread

# Banned functions (see src/base/banned.h): a use anywhere in src/ fails the build.
lint-banned:
	@if grep -nE '(^|[^_a-zA-Z0-9.>])(strcpy|strcat|strncpy|strncat|strtok|sprintf|vsprintf|gets)[[:space:]]*\(' \
		$$(find src -name '*.c' -o -name '*.h' | grep -v banned.h); then \
		echo "error: banned function used (see src/base/banned.h)" >&2; exit 1; fi

# The fault shim of tests/e2e/faults.c (tests/faults/killshim.c): preloaded
# into forgex-core by that suite only; never linked into a program, and
# built without the sanitizers (the suite lets ASan run it second).
SHIM := $(BUILD)/tests/faults/killshim.so
$(SHIM): tests/faults/killshim.c
	@mkdir -p $(@D)
	@echo '  CC      $@'
	@$(CC) -std=c11 -D_GNU_SOURCE $(WARNINGS) -O1 -g -fPIC -shared -o $@ $< -ldl

# The suites run in parallel, TEST_JOBS at a time (default: twice the cores);
# see tests/README.md. tests/selfcontained.sh and tests/layers.sh check the
# tree itself (no machine paths; the layer order of every include).
test: $(PROGRAMS) $(MOCK_BIN) $(UNIT_BIN) $(E2E_BIN) $(FUZZ_BIN) $(SHIM)
	@BUILD=$(BUILD) sh tests/run.sh $(UNIT_BIN) $(E2E_BIN) $(FUZZ_BIN) tests/selfcontained.sh \
		tests/layers.sh

# Every step of the scripted run, each fault (see tests/e2e/faults.c).
faults: $(PROGRAMS) $(MOCK_BIN) $(BUILD)/tests/e2e/faults $(SHIM)
	@FX_FAULTS=all BUILD=$(BUILD) sh tests/run.sh $(BUILD)/tests/e2e/faults

san:
	@$(MAKE) --no-print-directory BUILD=build/san SAN=1 CFLAGS='-O1 -g' test

FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE -DFX_VERSION='"$(VERSION)"' -g -O1 -Isrc \
	-fsanitize=fuzzer,address,undefined $(shell $(PKG_CONFIG) --cflags $(PKGS))
fuzz:
	@mkdir -p build/fuzz
	@set -e; for f in $(FUZZ_SRC); do \
		n=$$(basename $$f .c); \
		echo "  FUZZ build/fuzz/$$n"; \
		clang $(FUZZ_CFLAGS) -o build/fuzz/$$n $$f $(LIB_SRC) $(LIBS); \
	done

# Installing: the launcher in bin, forgex-core where the launcher finds it
# (../libexec/forgex), the manual page and the completions made from the
# help texts by the program itself.
PREFIX ?= /usr/local
DESTDIR ?=
BINDIR := $(PREFIX)/bin
LIBEXECDIR := $(PREFIX)/libexec/forgex
MANDIR := $(PREFIX)/share/man
DATADIR := $(PREFIX)/share

$(BUILD)/forgex.1: $(BUILD)/forgex
	@echo '  GEN     $@'
	@$(BUILD)/forgex help --man > $@.tmp && mv $@.tmp $@

$(BUILD)/completion/%: $(BUILD)/forgex
	@mkdir -p $(@D)
	@echo '  GEN     $@'
	@$(BUILD)/forgex completion $* > $@.tmp && mv $@.tmp $@

install: $(PROGRAMS) $(BUILD)/forgex.1 $(BUILD)/completion/bash $(BUILD)/completion/zsh \
	 $(BUILD)/completion/fish
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBEXECDIR) $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(DATADIR)/bash-completion/completions \
		$(DESTDIR)$(DATADIR)/zsh/site-functions \
		$(DESTDIR)$(DATADIR)/fish/vendor_completions.d
	install -m 755 $(BUILD)/forgex $(DESTDIR)$(BINDIR)/forgex
	install -m 755 $(BUILD)/forgex-core $(DESTDIR)$(LIBEXECDIR)/forgex-core
	install -m 644 $(BUILD)/forgex.1 $(DESTDIR)$(MANDIR)/man1/forgex.1
	install -m 644 $(BUILD)/completion/bash $(DESTDIR)$(DATADIR)/bash-completion/completions/forgex
	install -m 644 $(BUILD)/completion/zsh $(DESTDIR)$(DATADIR)/zsh/site-functions/_forgex
	install -m 644 $(BUILD)/completion/fish $(DESTDIR)$(DATADIR)/fish/vendor_completions.d/forgex.fish

# The main job, offline: the whole pipeline on a copy of examples/demo/project,
# every model answer replayed from examples/demo/transcript.jsonl.
demo: all
	@BUILD=$(abspath $(BUILD)) sh examples/demo/run.sh

bench: all
	@sh bench/run.sh

clean:
	rm -rf build

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
