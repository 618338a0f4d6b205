# demo/rules.mk -- `make demo`, included by Makefile.in after
# stdlib-bindings/rules.mk, whose variables (OCAMLFIND, OCAML_STAGE,
# OCAML_CCOPTS) it uses.
#
# Builds the eventring command, a multi-threaded C program linked with the
# static library (demo/threads) and, when ocamlfind is there, a GC-heavy
# OCaml program linked with the staged runtime_events package and the
# instrumented runtime, whose probes report every GC phase and the
# allocation sizes (demo/gc_heavy); then runs demo/run.sh, which shows
# `eventring latency`, `stats`, `trace` and `report` on them and leaves
# the traces and the report (demo/demo-report.html) in demo/ below the
# build directory.

DEMO_THREADS = demo/threads
DEMO_GC = $(if $(OCAMLFIND),demo/gc_heavy)

.PHONY: demo demo-clean

demo: $(TOOL) $(DEMO_THREADS) $(DEMO_GC)
ifneq ($(TRACING_CPPFLAGS),)
	@echo "demo: this build has tracing disabled (--disable-tracing): nothing to show"; exit 1
else
	@$(SHELL) '$(srcdir)/demo/run.sh' '$(CURDIR)/$(TOOL)' '$(CURDIR)/demo' \
		'$(CURDIR)/$(DEMO_THREADS)' '$(if $(DEMO_GC),$(CURDIR)/$(DEMO_GC))'
endif

$(DEMO_THREADS): $(srcdir)/demo/threads.c $(LIB_A) Makefile
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) -I$(srcdir)/runtime $(TRACING_CPPFLAGS) $(CPPFLAGS) \
		$(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_A) $(STATIC_LIBS)

# ocamlopt writes its objects beside the source, so it compiles a copy.
ifneq ($(OCAMLFIND),)
demo/gc_heavy: $(srcdir)/demo/gc_heavy.ml ocaml-stage
	@rm -rf demo/ocaml-tmp; mkdir -p demo/ocaml-tmp
	cp $< demo/ocaml-tmp/
	OCAMLPATH='$(CURDIR)/$(OCAML_STAGE)' $(OCAMLFIND) ocamlopt \
		-package runtime_events,threads.posix -thread -linkpkg \
		-runtime-variant i $(OCAML_CCOPTS) \
		-o $@ demo/ocaml-tmp/gc_heavy.ml
	@rm -rf demo/ocaml-tmp
endif

clean: demo-clean
demo-clean:
	rm -f demo/threads demo/gc_heavy demo/demo-trace.fxt \
		demo/demo-gc-trace.fxt demo/*-pause.fxt demo/demo-report.html
	rm -rf demo/ocaml-tmp
