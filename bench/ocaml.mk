# bench/ocaml.mk -- the OCaml programs of bench/bench_ocaml_runtime.c (the
# patched runtime's cost, issue 21) and `make bench-compiler`; included by
# Makefile.in after stdlib-bindings/rules.mk and patches/rules.mk, whose
# variables (OCAMLFIND, OCAML_STAGE, OCAML_CCOPTS, OCAML_RT, OCAML_SRC) it
# uses.
#
# bench/ocaml_gc_work.ml is linked with runtime_events.auto four ways:
#   bench/ocaml-gc-stock  no -runtime-variant (Debian's normal runtime)
#   bench/ocaml-gc-i      -runtime-variant i (Debian's instrumented one)
#   bench/ocaml-gc-er     -runtime-variant _er  } only once `make
#   bench/ocaml-gc-eri    -runtime-variant _eri } ocaml-runtime` built them
# The driver skips, saying so, when a program is missing; `make bench`
# never builds the patched runtime itself (a minute or two), it uses the
# one there is.
#
#   make bench-compiler [OCAML_SRC=...]
#
# runs bench/whole_compiler.sh: a whole patched compiler built, installed
# in a temporary prefix and used (many minutes; never part of `check`).

BENCH_OCAML_GC_ML = $(srcdir)/bench/ocaml_gc_work.ml
BENCH_OCAML_RT_BUILT := $(wildcard $(OCAML_RT)/libasmrun_er.a)

.PHONY: bench-compiler bench-ocaml-gc-stale bench-ocaml-clean

ifneq ($(OCAMLFIND),)

# $(1): the program, $(2): its -runtime-variant option (or nothing).
define bench_ocaml_gc_link
	@rm -rf $(1).tmp; mkdir -p $(1).tmp
	cp $(BENCH_OCAML_GC_ML) $(1).tmp/
	OCAMLPATH='$(CURDIR)/$(OCAML_STAGE)' $(OCAMLFIND) ocamlopt \
		-package runtime_events.auto -linkpkg $(2) $(OCAML_CCOPTS) \
		-o $(1) $(1).tmp/ocaml_gc_work.ml
	@rm -rf $(1).tmp
endef

bench: bench/ocaml-gc-stock bench/ocaml-gc-i
bench/ocaml-gc-stock: $(BENCH_OCAML_GC_ML) $(OCAML_PKG_FILES) | ocaml-stage
	$(call bench_ocaml_gc_link,$@,)
bench/ocaml-gc-i: $(BENCH_OCAML_GC_ML) $(OCAML_PKG_FILES) | ocaml-stage
	$(call bench_ocaml_gc_link,$@,-runtime-variant i)

ifneq ($(BENCH_OCAML_RT_BUILT),)
# ocaml-runtime stages the variants again (ocaml-stage empties the
# package directory) and rebuilds them only when the series changed.
bench: bench/ocaml-gc-er bench/ocaml-gc-eri
bench/ocaml-gc-er: $(BENCH_OCAML_GC_ML) $(OCAML_PKG_FILES) \
		$(OCAML_RT)/libasmrun_er.a | ocaml-runtime
	$(call bench_ocaml_gc_link,$@,-runtime-variant _er)
bench/ocaml-gc-eri: $(BENCH_OCAML_GC_ML) $(OCAML_PKG_FILES) \
		$(OCAML_RT)/libasmrun_eri.a | ocaml-runtime
	$(call bench_ocaml_gc_link,$@,-runtime-variant _eri)
else
# Programs left from a runtime since cleaned would be measured otherwise.
bench: bench-ocaml-gc-stale
bench-ocaml-gc-stale:
	@rm -f bench/ocaml-gc-er bench/ocaml-gc-eri
endif

endif

# `make bench-ocaml-base` (opt-in: it builds a runtime, a minute or
# two): the same source and build as `make ocaml-runtime`, without the
# series (a patch that only adds a note file stands in for it, since
# build-aux/ocaml-runtime wants one), linked as bench/ocaml-gc-base; the
# benchmark then compares _er with it too, like for like.
BENCH_OCAML_BASE = bench/ocaml-base
.PHONY: bench-ocaml-base
ifneq ($(OCAMLFIND),)
bench-ocaml-base: ocaml-stage
	@rm -rf $(BENCH_OCAML_BASE)/patches
	@v=$$($(OCAMLFIND) ocamlopt -version) && \
	mkdir -p $(BENCH_OCAML_BASE)/patches/ocaml-$$v && \
	printf '%s\n' '--- /dev/null' '+++ b/eventring-baseline.txt' \
		'@@ -0,0 +1 @@' '+unpatched: the baseline of bench_ocaml_runtime' \
		> $(BENCH_OCAML_BASE)/patches/ocaml-$$v/0000-baseline-note.patch
	OCAMLFIND='$(OCAMLFIND)' $(SHELL) $(srcdir)/build-aux/ocaml-runtime \
		'$(OCAML_SRC)' $(BENCH_OCAML_BASE) $(BENCH_OCAML_BASE)/patches
	cp $(BENCH_OCAML_BASE)/libasmrun_er.a $(BENCH_OCAML_BASE)/libasmrun_base.a
	$(call bench_ocaml_gc_link,bench/ocaml-gc-base,\
		-I $(BENCH_OCAML_BASE) -runtime-variant _base)

# Once built, `make bench` relinks it when the program changes.
ifneq ($(wildcard $(BENCH_OCAML_BASE)/libasmrun_base.a),)
bench: bench/ocaml-gc-base
bench/ocaml-gc-base: $(BENCH_OCAML_GC_ML) $(OCAML_PKG_FILES) \
		$(BENCH_OCAML_BASE)/libasmrun_base.a | ocaml-stage
	$(call bench_ocaml_gc_link,$@,\
		-I $(BENCH_OCAML_BASE) -runtime-variant _base)
endif
endif

bench-compiler:
	$(SHELL) $(srcdir)/bench/whole_compiler.sh '$(OCAML_SRC)' \
		$(srcdir)/patches

clean: bench-ocaml-clean
bench-ocaml-clean:
	rm -f bench/ocaml-gc-stock bench/ocaml-gc-i bench/ocaml-gc-er \
		bench/ocaml-gc-eri bench/ocaml-gc-base
	rm -rf $(BENCH_OCAML_BASE)
	rm -rf bench/ocaml-gc-*.tmp
