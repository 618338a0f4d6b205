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

# The baseline: the same source built the same way as `make
# ocaml-runtime` builds it, without the series (build-aux/ocaml-runtime's
# OCAML_RUNTIME_UNPATCHED), linked as bench/ocaml-gc-base.  Debian's own
# runtime is another build (3-7 % less CPU here for the same instruction
# count), so the targets are judged against this one.  Built by the first
# `make bench` once the patched runtime exists (a minute or two), or by
# `make bench-ocaml-base`; kept afterwards.
BENCH_OCAML_BASE = bench/ocaml-base
.PHONY: bench-ocaml-base
ifneq ($(OCAMLFIND),)
bench-ocaml-base: bench/ocaml-gc-base
$(BENCH_OCAML_BASE)/libasmrun_base.a: $(srcdir)/build-aux/ocaml-runtime
	OCAML_RUNTIME_UNPATCHED=1 OCAMLFIND='$(OCAMLFIND)' \
		$(SHELL) $(srcdir)/build-aux/ocaml-runtime \
		'$(OCAML_SRC)' $(BENCH_OCAML_BASE) $(srcdir)/patches
	cp $(BENCH_OCAML_BASE)/libasmrun_er.a $@

bench/ocaml-gc-base: $(BENCH_OCAML_GC_ML) $(OCAML_PKG_FILES) \
		$(BENCH_OCAML_BASE)/libasmrun_base.a | ocaml-stage
	$(call bench_ocaml_gc_link,$@,\
		-I $(BENCH_OCAML_BASE) -runtime-variant _base)

ifneq ($(BENCH_OCAML_RT_BUILT),)
bench: bench/ocaml-gc-base
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
