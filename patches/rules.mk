# patches/rules.mk -- OCaml's runtime with eventring's probes, built from
# OCaml's sources and the series in patches/ocaml-VERSION/ as the runtime
# variants _er (normal) and _eri (instrumented); included by Makefile.in
# after stdlib-bindings/rules.mk, whose package directory receives them.
#
#   make ocaml-runtime [OCAML_SRC=DIR|TARBALL]
#
# builds only the runtime libraries (build-aux/ocaml-runtime says how)
# into $(OCAML_RT) and stages them in the package, so that
#   ocamlfind ocamlopt -package runtime_events -linkpkg -runtime-variant _er
# links the patched normal runtime; `make install` installs them with the
# package when they are built.  The default source is Debian's
# ocaml-source package.  `make check` builds them when that source is
# there (not in sanitizer builds, whose OCaml tests do not run), and the
# OCaml tests that need them skip, saying so, when it is not.

OCAML_SRC = /usr/src/ocaml-source-4.13.1.tar
# Where the libraries are built; a CI stage may point it at another build
# directory's, built already from the same sources.
OCAML_RT = ocaml-runtime
OCAML_RT_LIBS = libasmrun_er.a libasmrun_eri.a libcamlrun_er.a \
	libcamlrun_eri.a
# What `make install` adds to the package: the variants, once built.
OCAML_RT_INSTALL = $(wildcard $(addprefix $(OCAML_RT)/,$(OCAML_RT_LIBS)))
OCAML_RT_INPUTS = $(srcdir)/build-aux/ocaml-runtime $(srcdir)/build-aux/ocaml-unpack \
	$(wildcard $(srcdir)/patches/ocaml-*/*.patch)

.PHONY: ocaml-runtime ocaml-runtime-auto ocaml-runtime-clean

ifneq ($(OCAMLFIND),)

# Built again when the source named, the series or the script change.
ocaml-runtime: ocaml-stage
	@if [ ! -f '$(OCAML_RT)/libasmrun_er.a' ] || \
	    [ "$$(cat '$(OCAML_RT)/SOURCE' 2>/dev/null)" != '$(OCAML_SRC)' ] || \
	    [ -n "$$(find $(OCAML_RT_INPUTS) -newer '$(OCAML_RT)/libasmrun_er.a')" ]; then \
		OCAMLFIND='$(OCAMLFIND)' $(SHELL) $(srcdir)/build-aux/ocaml-runtime \
			'$(OCAML_SRC)' '$(OCAML_RT)' $(srcdir)/patches && \
		echo '$(OCAML_SRC)' > '$(OCAML_RT)/SOURCE'; \
	fi
	@cd '$(OCAML_RT)' && cp $(OCAML_RT_LIBS) '$(CURDIR)/$(OCAML_PKGDIR)/'

# What `make check` builds: the variants when the source is at hand and
# the build is not a sanitizer's.
ocaml-runtime-auto: ocaml-stage
ifeq ($(SAN_FLAGS),)
	@if [ -e '$(OCAML_SRC)' ]; then $(MAKE) --no-print-directory ocaml-runtime; \
	else echo "note: $(OCAML_SRC) is missing (Debian's ocaml-source):" \
		"the patched OCaml runtime is not built, its tests skip"; fi
endif

check-programs: ocaml-runtime-auto

else

ocaml-runtime ocaml-runtime-auto:
	@echo "ocamlfind not found: the patched OCaml runtime is not built"

endif

clean: ocaml-runtime-clean
ocaml-runtime-clean:
	rm -rf ocaml-runtime
