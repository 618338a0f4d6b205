# stdlib-bindings/rules.mk -- the OCaml Runtime_events package for OCaml
# 4.13, built with ocamlfind; included by Makefile.in, whose variables it
# uses.  Without ocamlfind every target here says so and does nothing.
#
# Outputs, below the build directory:
#   stdlib-bindings/                  objects and archives
#   stdlib-bindings/stage/            an OCAMLPATH holding the package as it
#                                     is installed, for the tests and the
#                                     benchmark
#   testsuite/ocaml-tests             the OCaml test runner, run by `check`
#   bench/bench_ocaml_reader          the OCaml reader benchmark
#   bench/bench_ocaml_fork            the OCaml fork benchmark
#
# Runtime_events_snapshot (the in-process snapshot, eventring's own and not
# OCaml 5's) is a module of its own in the same archives, so that every
# program of the package can use it and none links it unless it does;
# so is Runtime_events_thread (a thread's name in the trace).
#
# The C archive libeventring_ocaml.a holds the stubs and every object of
# libeventring_i (the bridge to the instrumented runtime included), so that
# a program links the whole of eventring statically, ahead of the OCaml
# runtime archive, whichever runtime variant it uses.  The plain-bytecode
# DLL dllruntime_events_stubs.so holds the same objects.

OCAMLFIND := $(shell command -v ocamlfind 2>/dev/null)
OCAML_WHERE := $(if $(OCAMLFIND),$(shell $(OCAMLFIND) ocamlc -where 2>/dev/null))

OCB = stdlib-bindings
OCAML_SRCDIR = $(srcdir)/stdlib-bindings
OCAML_STAGE = $(OCB)/stage
OCAML_PKGDIR = $(OCAML_STAGE)/runtime_events
# Where `make install` puts the package: findlib's own destination when it
# lies in the prefix's lib directory (with the default prefix, /usr/local,
# Debian's findlib installs into /usr/local/lib/ocaml/VERSION, which it
# searches), else $(prefix)/lib/ocaml, to be added to OCAMLPATH.  Not
# merely below the prefix: /usr/local/lib/... is below /usr, but belongs
# to the prefix /usr/local, not to /usr.  Either may be set on the command
# line.
OCAML_FINDLIB_DESTDIR := $(if $(OCAMLFIND),$(shell $(OCAMLFIND) printconf destdir 2>/dev/null))
OCAML_INSTALL_DIR = $(if $(filter $(prefix)/lib/%,$(OCAML_FINDLIB_DESTDIR)),$(OCAML_FINDLIB_DESTDIR),$(prefix)/lib/ocaml)
# The plain-bytecode DLL goes where `ocamlfind install` would put it: the
# destination's stublibs directory when the compiler's ld.conf lists it (so
# that ocamlrun finds it for every program, including dune's, which do not
# carry the META's -dllpath), else the package directory, where ocamlc finds
# it at link time and the -dllpath that ocamlfind passes finds it at run time.
OCAML_LDCONF_DIRS = $(if $(OCAML_WHERE),$(shell cat '$(OCAML_WHERE)/ld.conf' 2>/dev/null))
OCAML_STUBLIBS = $(OCAML_INSTALL_DIR)/stublibs
OCAML_DLL_IN_STUBLIBS = $(filter $(OCAML_STUBLIBS),$(OCAML_LDCONF_DIRS))
OCAML_DLL_DIR = $(if $(OCAML_DLL_IN_STUBLIBS),$(OCAML_STUBLIBS),$(OCAML_INSTALL_DIR)/runtime_events)

# C libraries every program of the package links after the archive, as
# -cclib options (ATOMIC_LIBS: libatomic_ops when configured with it).
OCAML_CCLIBS = -cclib -leventring_ocaml \
	$(foreach l,$(ATOMIC_LIBS) -lpthread $(LIBS),-cclib $(l))
# -u makes the linker take the bridge (ocaml_bridge.o) out of the archive,
# which comes before the OCaml runtime's, even in a program that links the
# package but never refers to Runtime_events: the instrumented runtime's
# eventlog.o is then never pulled in.  Sanitizer builds compile eventring
# with -fsanitize: a program linking it needs the same flags at link time.
OCAML_CCOPTS = -ccopt -Wl,-u,eventring__ocaml_bridge_init \
	$(if $(SAN_FLAGS),-ccopt '$(SAN_FLAGS)')
OCAML_STUBS_CFLAGS = $(BASE_CFLAGS) -fPIC -I$(srcdir)/runtime \
	-I$(OCAML_WHERE) $(CPPFLAGS) $(CFLAGS)

# The `i` bridge (runtime-instrumented/ocaml_bridge.c) records the version
# of the OCaml it is built for, from that OCaml's caml/version.h.
ifneq ($(OCAML_WHERE),)
runtime-instrumented/ocaml_bridge.i.o: LIBI_CFLAGS += \
	-DEVENTRING_OCAML_VERSION_H='"$(OCAML_WHERE)/caml/version.h"'
endif

OCAML_OBJS = $(OCB)/runtime_events.cmi $(OCB)/runtime_events.cmo \
	$(OCB)/runtime_events.cmx $(OCB)/runtime_events.o \
	$(OCB)/runtime_events_auto.cmi $(OCB)/runtime_events_auto.cmo \
	$(OCB)/runtime_events_auto.cmx $(OCB)/runtime_events_auto.o \
	$(OCB)/runtime_events_snapshot.cmi $(OCB)/runtime_events_snapshot.cmo \
	$(OCB)/runtime_events_snapshot.cmx $(OCB)/runtime_events_snapshot.o \
	$(OCB)/runtime_events_thread.cmi $(OCB)/runtime_events_thread.cmo \
	$(OCB)/runtime_events_thread.cmx $(OCB)/runtime_events_thread.o
OCAML_STUB_OBJS = $(OCB)/runtime_events_stubs.o \
	$(OCB)/runtime_events_snapshot_stubs.o
OCAML_LIBS = $(OCB)/libeventring_ocaml.a $(OCB)/dllruntime_events_stubs.so \
	$(OCB)/runtime_events.cma $(OCB)/runtime_events.cmxa \
	$(OCB)/runtime_events.a
# What the package directory holds (installed and staged alike).
OCAML_PKG_FILES = $(OCAML_SRCDIR)/runtime_events.mli \
	$(OCB)/runtime_events.cmi $(OCB)/runtime_events.cmx \
	$(OCB)/runtime_events.cma $(OCB)/runtime_events.cmxa \
	$(OCB)/runtime_events.a $(OCB)/libeventring_ocaml.a \
	$(OCB)/runtime_events_auto.cmi $(OCB)/runtime_events_auto.cmo \
	$(OCB)/runtime_events_auto.cmx $(OCB)/runtime_events_auto.o \
	$(OCAML_SRCDIR)/runtime_events_snapshot.mli \
	$(OCB)/runtime_events_snapshot.cmi $(OCB)/runtime_events_snapshot.cmx \
	$(OCAML_SRCDIR)/runtime_events_thread.mli \
	$(OCB)/runtime_events_thread.cmi $(OCB)/runtime_events_thread.cmx

.PHONY: ocaml-all ocaml-stage ocaml-install ocaml-uninstall ocaml-clean

ifneq ($(OCAMLFIND),)

all: ocaml-all
ocaml-all: $(OCAML_LIBS) $(OCAML_OBJS)

$(OCB)/runtime_events_stubs.o: $(OCAML_SRCDIR)/runtime_events_stubs.c \
		$(srcdir)/runtime/eventring.h Makefile
	@mkdir -p $(@D)
	$(CC) $(OCAML_STUBS_CFLAGS) -c -o $@ $<

$(OCB)/runtime_events_snapshot_stubs.o: \
		$(OCAML_SRCDIR)/runtime_events_snapshot_stubs.c \
		$(srcdir)/runtime/eventring.h Makefile
	@mkdir -p $(@D)
	$(CC) $(OCAML_STUBS_CFLAGS) -c -o $@ $<

$(OCB)/libeventring_ocaml.a: $(OCAML_STUB_OBJS) $(RTI_OBJS)
	rm -f $@
	$(AR) rcs $@ $(OCAML_STUB_OBJS) $(RTI_OBJS)

# No -z defs: the OCaml runtime's symbols come from ocamlrun at load time.
$(OCB)/dllruntime_events_stubs.so: $(OCAML_STUB_OBJS) $(RTI_OBJS)
	$(CC) $(SAN_FLAGS) $(CFLAGS) $(LDFLAGS) -shared -pthread -o $@ \
		$(OCAML_STUB_OBJS) $(RTI_OBJS) $(STATIC_LIBS)

$(OCB)/runtime_events.cmi: $(OCAML_SRCDIR)/runtime_events.mli Makefile
	@mkdir -p $(@D)
	$(OCAMLFIND) ocamlc -g -c -o $@ $<

# Both compilers write the .cmi of an .ml without .mli; let one do it.
$(OCB)/runtime_events_auto.cmi: $(OCB)/runtime_events_auto.cmo
$(OCB)/runtime_events_auto.cmo: \
		$(OCAML_SRCDIR)/runtime_events_auto.ml $(OCB)/runtime_events.cmi
	$(OCAMLFIND) ocamlc -g -I $(OCB) -c -o $(OCB)/runtime_events_auto.cmo $<

$(OCB)/runtime_events_auto.o: $(OCB)/runtime_events_auto.cmx
$(OCB)/runtime_events_auto.cmx: \
		$(OCAML_SRCDIR)/runtime_events_auto.ml $(OCB)/runtime_events_auto.cmi \
		$(OCB)/runtime_events.cmx
	$(OCAMLFIND) ocamlopt -g -I $(OCB) -c -o $(OCB)/runtime_events_auto.cmx $<

$(OCB)/runtime_events.cmo: $(OCAML_SRCDIR)/runtime_events.ml \
		$(OCB)/runtime_events.cmi
	$(OCAMLFIND) ocamlc -g -I $(OCB) -c -o $@ $<

$(OCB)/runtime_events.o: $(OCB)/runtime_events.cmx
$(OCB)/runtime_events.cmx: \
		$(OCAML_SRCDIR)/runtime_events.ml $(OCB)/runtime_events.cmi
	$(OCAMLFIND) ocamlopt -g -inline 200 -I $(OCB) -c \
		-o $(OCB)/runtime_events.cmx $<

$(OCB)/runtime_events_snapshot.cmi: \
		$(OCAML_SRCDIR)/runtime_events_snapshot.mli Makefile
	@mkdir -p $(@D)
	$(OCAMLFIND) ocamlc -g -c -o $@ $<

$(OCB)/runtime_events_snapshot.cmo: \
		$(OCAML_SRCDIR)/runtime_events_snapshot.ml \
		$(OCB)/runtime_events_snapshot.cmi
	$(OCAMLFIND) ocamlc -g -I $(OCB) -c -o $@ $<

$(OCB)/runtime_events_snapshot.o: $(OCB)/runtime_events_snapshot.cmx
$(OCB)/runtime_events_snapshot.cmx: \
		$(OCAML_SRCDIR)/runtime_events_snapshot.ml \
		$(OCB)/runtime_events_snapshot.cmi
	$(OCAMLFIND) ocamlopt -g -I $(OCB) -c \
		-o $(OCB)/runtime_events_snapshot.cmx $<

$(OCB)/runtime_events_thread.cmi: \
		$(OCAML_SRCDIR)/runtime_events_thread.mli Makefile
	@mkdir -p $(@D)
	$(OCAMLFIND) ocamlc -g -c -o $@ $<

$(OCB)/runtime_events_thread.cmo: \
		$(OCAML_SRCDIR)/runtime_events_thread.ml \
		$(OCB)/runtime_events_thread.cmi
	$(OCAMLFIND) ocamlc -g -I $(OCB) -c -o $@ $<

$(OCB)/runtime_events_thread.o: $(OCB)/runtime_events_thread.cmx
$(OCB)/runtime_events_thread.cmx: \
		$(OCAML_SRCDIR)/runtime_events_thread.ml \
		$(OCB)/runtime_events_thread.cmi
	$(OCAMLFIND) ocamlopt -g -I $(OCB) -c \
		-o $(OCB)/runtime_events_thread.cmx $<

$(OCB)/runtime_events.cma: $(OCB)/runtime_events.cmo \
		$(OCB)/runtime_events_snapshot.cmo $(OCB)/runtime_events_thread.cmo \
		$(OCAML_SRCDIR)/rules.mk
	$(OCAMLFIND) ocamlc -a -o $@ $(OCB)/runtime_events.cmo \
		$(OCB)/runtime_events_snapshot.cmo $(OCB)/runtime_events_thread.cmo \
		-dllib -lruntime_events_stubs \
		$(OCAML_CCLIBS) $(OCAML_CCOPTS)

$(OCB)/runtime_events.a: $(OCB)/runtime_events.cmxa
$(OCB)/runtime_events.cmxa: $(OCB)/runtime_events.cmx \
		$(OCB)/runtime_events_snapshot.cmx $(OCB)/runtime_events_thread.cmx \
		$(OCAML_SRCDIR)/rules.mk
	$(OCAMLFIND) ocamlopt -a -o $(OCB)/runtime_events.cmxa \
		$(OCB)/runtime_events.cmx $(OCB)/runtime_events_snapshot.cmx \
		$(OCB)/runtime_events_thread.cmx \
		$(OCAML_CCLIBS) $(OCAML_CCOPTS)

# @DLLDIR@ is where the package's DLL lives once installed, so that plain
# bytecode programs find it without CAML_LD_LIBRARY_PATH.
OCAML_META_SED = sed -e 's|[@]VERSION[@]|$(VERSION)|g' \
	-e 's|[@]DLLDIR[@]|$(1)|g'

# The staged copy: the package as installed, below the build directory,
# with the patched runtime variants when they are built (patches/rules.mk):
# staging again (`make demo`, `make bench`) must not drop them.
ocaml-stage: ocaml-all
	@rm -rf $(OCAML_PKGDIR); mkdir -p $(OCAML_PKGDIR)
	@cp $(OCAML_PKG_FILES) \
		$(OCB)/dllruntime_events_stubs.so $(OCAML_PKGDIR)/
	@$(if $(OCAML_RT_INSTALL),cp $(OCAML_RT_INSTALL) $(OCAML_PKGDIR)/)
	@$(call OCAML_META_SED,$(CURDIR)/$(OCAML_PKGDIR)) \
		$(OCAML_SRCDIR)/META.in > $(OCAML_PKGDIR)/META

install: ocaml-install
ocaml-install: ocaml-all
	$(INSTALL) -d $(DESTDIR)$(OCAML_INSTALL_DIR)
	$(OCAMLFIND) remove -destdir $(DESTDIR)$(OCAML_INSTALL_DIR) \
		runtime_events >/dev/null 2>&1 || true
	@# META names the DLL's directory, which depends on prefix and
	@# OCAML_INSTALL_DIR as given to this very `make install`.
	@mkdir -p $(OCB)/install
	$(call OCAML_META_SED,$(OCAML_DLL_DIR)) $(OCAML_SRCDIR)/META.in \
		> $(OCB)/install/META
ifneq ($(OCAML_DLL_IN_STUBLIBS),)
	$(INSTALL) -d $(DESTDIR)$(OCAML_STUBLIBS)
	$(OCAMLFIND) install -destdir $(DESTDIR)$(OCAML_INSTALL_DIR) \
		-ldconf ignore runtime_events $(OCB)/install/META \
		$(OCAML_PKG_FILES) $(OCAML_RT_INSTALL) \
		-dll $(OCB)/dllruntime_events_stubs.so
else
	$(OCAMLFIND) install -destdir $(DESTDIR)$(OCAML_INSTALL_DIR) \
		-ldconf ignore runtime_events $(OCB)/install/META \
		$(OCAML_PKG_FILES) $(OCAML_RT_INSTALL) \
		-nodll $(OCB)/dllruntime_events_stubs.so
	@echo "note: $(OCAML_STUBLIBS) is not in $(OCAML_WHERE)/ld.conf, so"
	@echo "  dllruntime_events_stubs.so is in the package directory: bytecode"
	@echo "  linked by ocamlfind finds it; dune's needs CAML_LD_LIBRARY_PATH=$(OCAML_DLL_DIR)"
endif

uninstall: ocaml-uninstall
ocaml-uninstall:
	$(OCAMLFIND) remove -destdir $(DESTDIR)$(OCAML_INSTALL_DIR) \
		runtime_events >/dev/null 2>&1 || true

check-programs: testsuite/ocaml-tests ocaml-stage

# The OCaml tests build their programs against the staged package.  The
# benchmark is relinked when the package's files change, not on every
# `make bench`: the stage (a phony target) only has to be there first.
bench: bench/bench_ocaml_reader
BENCH_BINS += bench/bench_ocaml_reader
bench/bench_ocaml_reader: $(srcdir)/bench/bench_ocaml_reader.ml \
		$(OCAML_PKG_FILES) $(OCB)/dllruntime_events_stubs.so | ocaml-stage
	@rm -rf bench/ocaml-tmp; mkdir -p bench/ocaml-tmp
	cp $< bench/ocaml-tmp/
	OCAMLPATH='$(CURDIR)/$(OCAML_STAGE)' $(OCAMLFIND) ocamlopt -inline 200 \
		-package runtime_events,unix -linkpkg $(OCAML_CCOPTS) \
		-o $@ bench/ocaml-tmp/bench_ocaml_reader.ml
	@rm -rf bench/ocaml-tmp

bench: bench/bench_ocaml_fork
BENCH_BINS += bench/bench_ocaml_fork
bench/bench_ocaml_fork: $(srcdir)/bench/bench_ocaml_fork.ml \
		$(OCAML_PKG_FILES) $(OCB)/dllruntime_events_stubs.so | ocaml-stage
	@rm -rf bench/ocaml-fork-tmp; mkdir -p bench/ocaml-fork-tmp
	cp $< bench/ocaml-fork-tmp/
	OCAMLPATH='$(CURDIR)/$(OCAML_STAGE)' $(OCAMLFIND) ocamlopt \
		-package runtime_events,unix -linkpkg $(OCAML_CCOPTS) \
		-o $@ bench/ocaml-fork-tmp/bench_ocaml_fork.ml
	@rm -rf bench/ocaml-fork-tmp

else

all: ocaml-all
ocaml-all ocaml-stage ocaml-install ocaml-uninstall:
	@echo "ocamlfind not found: the OCaml bindings (stdlib-bindings/) are skipped"
install: ocaml-install
check-programs: testsuite/ocaml-tests

endif

TESTS += ocaml-tests

# A wrapper in the build directory, so that `check` runs it as it runs the
# other tests; testsuite/ocaml/run.sh skips (77) without ocamlfind.
testsuite/ocaml-tests: $(srcdir)/testsuite/ocaml/run.sh Makefile
	@mkdir -p $(@D)
	printf '#!/bin/sh\nexec $(SHELL) %s "$$@"\n' \
		"'$(abspath $(srcdir))/testsuite/ocaml/run.sh'" > $@.tmp
	chmod +x $@.tmp && mv $@.tmp $@

clean: ocaml-clean
ocaml-clean:
	rm -rf $(OCB)/stage $(OCB)/install
	rm -f $(OCB)/*.cm[ioxa] $(OCB)/*.cmxa $(OCB)/*.o $(OCB)/*.a \
		$(OCB)/*.so $(OCB)/META $(OCB)/META.tmp
	rm -f testsuite/ocaml-tests bench/bench_ocaml_reader bench/bench_ocaml_fork
	rm -rf bench/ocaml-tmp bench/ocaml-fork-tmp
