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
#
# The same OCaml program is also linked with the stock normal runtime
# (demo/gc_heavy_hooks: only the package's GC hooks report) and, once
# `make ocaml-runtime` has built it, with the patched normal runtime
# (demo/gc_heavy_er, -runtime-variant _er), and run.sh lists what each
# of the three sees side by side.  `make demo` builds the patched runtime
# (a minute, once) when OCaml's source is there (Debian's ocaml-source,
# which ./bootstrap installs, or OCAML_SRC=); without it, the demo says
# so and shows the other two.

DEMO_THREADS = demo/threads
DEMO_GC = $(if $(OCAMLFIND),demo/gc_heavy)
DEMO_GC_HOOKS = $(if $(OCAMLFIND),demo/gc_heavy_hooks)
DEMO_GC_ER = $(if $(OCAMLFIND),$(if $(wildcard \
	$(OCAML_RT)/libasmrun_er.a $(OCAML_SRC)),demo/gc_heavy_er))

.PHONY: demo demo-clean

demo: $(TOOL) $(DEMO_THREADS) $(DEMO_GC) $(DEMO_GC_HOOKS) $(DEMO_GC_ER)
ifneq ($(TRACING_CPPFLAGS),)
	@echo "demo: this build has tracing disabled (--disable-tracing): nothing to show"; exit 1
else
	@$(SHELL) '$(srcdir)/demo/run.sh' '$(CURDIR)/$(TOOL)' '$(CURDIR)/demo' \
		'$(CURDIR)/$(DEMO_THREADS)' '$(if $(DEMO_GC),$(CURDIR)/$(DEMO_GC))' \
		'$(if $(DEMO_GC_HOOKS),$(CURDIR)/$(DEMO_GC_HOOKS))' \
		'$(if $(DEMO_GC_ER),$(CURDIR)/$(DEMO_GC_ER))'
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

# $(1): the program, $(2): its -runtime-variant option (or nothing).
define demo_gc_link
	@rm -rf $(1).tmp; mkdir -p $(1).tmp
	cp $(srcdir)/demo/gc_heavy.ml $(1).tmp/
	OCAMLPATH='$(CURDIR)/$(OCAML_STAGE)' $(OCAMLFIND) ocamlopt \
		-package runtime_events,threads.posix -thread -linkpkg \
		$(2) $(OCAML_CCOPTS) -o $(1) $(1).tmp/gc_heavy.ml
	@rm -rf $(1).tmp
endef

demo/gc_heavy_hooks: $(srcdir)/demo/gc_heavy.ml ocaml-stage
	$(call demo_gc_link,$@,)

# ocaml-runtime stages the variants again after ocaml-stage (which
# empties the package directory); it rebuilds them only when the series
# changed.
demo/gc_heavy_er: $(srcdir)/demo/gc_heavy.ml ocaml-runtime
	$(call demo_gc_link,$@,-runtime-variant _er)
endif

clean: demo-clean
demo-clean:
	rm -f demo/threads demo/gc_heavy demo/gc_heavy_hooks demo/gc_heavy_er \
		demo/demo-trace.fxt \
		demo/demo-gc-trace.fxt demo/*-pause.fxt demo/demo-report.html
	rm -rf demo/ocaml-tmp demo/gc_heavy_hooks.tmp demo/gc_heavy_er.tmp
