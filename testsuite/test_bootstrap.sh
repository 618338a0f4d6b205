#!/bin/bash
# test_bootstrap.sh -- ./bootstrap's package step on machines it was not
# developed on: nothing installed, everything installed, a failing install,
# a half-removed package, a user without root, with and without sudo.
#
# The package step is build-aux/install-deps, the very script ./bootstrap
# runs.  It runs here against stand-ins for dpkg, apt-get, sudo and id,
# placed first in PATH: the dpkg stand-in knows only the packages in a
# state file, and the apt-get stand-in records what it is asked and adds
# the packages to that file (or fails, when told to).  Each case checks
# what was asked for and the exit status.
set -u

srcdir=${EVENTRING_TEST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
deps="$srcdir/build-aux/install-deps"
tmp=$(mktemp -d /tmp/eventring-bootstrap.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok: $*"; }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
check() { # check DESCRIPTION COMMAND...: passes when COMMAND succeeds
  local what=$1
  shift
  if "$@"; then ok "$what"; else bad "$what"; fi
}

all=$("$deps" --list)
n_all=$(echo $all | wc -w)
[ "$n_all" -gt 5 ] || { echo "FAIL: install-deps --list printed '$all'"; exit 1; }

# ---- The stand-ins. -------------------------------------------------
bin="$tmp/bin"
mkdir -p "$bin"
cat >"$bin/dpkg" <<'SH'
#!/bin/bash
# dpkg -s PKG: what a real dpkg prints, from the state file (its last
# line for PKG).
[ "$1" = "-s" ] || { echo "stand-in dpkg: unexpected $*" >&2; exit 2; }
line=$(grep "^$2 " "$STATE" 2>/dev/null | tail -n 1)
if [ -z "$line" ]; then
  echo "dpkg-query: package '$2' is not installed and no information is available" >&2
  exit 1
fi
echo "Package: $2"
echo "Status: ${line#* }"
echo "Version: 1.0"
# LONG=1: a description longer than a pipe holds, as real packages have.
[ -z "${LONG-}" ] || head -c 300000 /dev/zero | tr '\0' 'x'
exit 0
SH
cat >"$bin/apt-get" <<'SH'
#!/bin/bash
# Records the call (with the effective "user" from the sudo stand-in) and
# "installs" by adding the packages to the state file.
echo "${AS_ROOT:-direct} DEBIAN_FRONTEND=${DEBIAN_FRONTEND-} apt-get $*" >>"$LOG"
case $1 in
update) [ -z "${FAIL_UPDATE-}" ] || exit 100; exit 0 ;;
install)
  [ -z "${FAIL_INSTALL-}" ] || { echo "E: Unable to locate package" >&2; exit 100; }
  shift
  for p in "$@"; do
    case $p in -*) continue ;; esac
    [ -n "${FORGET-}" ] || echo "$p install ok installed" >>"$STATE"
  done
  exit 0 ;;
esac
exit 2
SH
cat >"$bin/sudo" <<'SH'
#!/bin/bash
echo "sudo $*" >>"$LOG"
AS_ROOT=sudo exec "$@"
SH
cat >"$bin/id" <<'SH'
#!/bin/bash
[ "$1" = "-u" ] && { echo "${FAKE_UID:-0}"; exit 0; }
exec /usr/bin/id "$@"
SH
chmod +x "$bin"/*

# A PATH without sudo: the stand-ins but sudo, and the system's tools.
nosudo="$tmp/nosudo"
mkdir -p "$nosudo"
for t in dpkg apt-get id; do ln -s "$bin/$t" "$nosudo/$t"; done
for t in bash env grep sed printf wc cat dirname mkdir; do
  p=$(command -v "$t") && ln -sf "$p" "$nosudo/$t"
done

# run CASE [VAR=VALUE...]: runs install-deps with the stand-ins, its
# status in $rc, its stderr in $tmp/CASE.err, the calls in $tmp/CASE.log.
run() {
  local name=$1
  shift
  : >"$tmp/$name.log"
  touch "$tmp/$name.state"
  env PATH="$bin:$PATH" STATE="$tmp/$name.state" LOG="$tmp/$name.log" "$@" \
    "$deps" >"$tmp/$name.out" 2>"$tmp/$name.err"
  rc=$?
}

# ---- Nothing installed: everything is asked for, once. --------------
run empty
check "empty machine: exit 0" [ "$rc" -eq 0 ]
check "empty machine: apt-get update first" \
  [ "$(sed -n 1p "$tmp/empty.log")" = "direct DEBIAN_FRONTEND=noninteractive apt-get update" ]
check "empty machine: one install of every package, noninteractive" \
  [ "$(sed -n 2p "$tmp/empty.log")" = \
    "direct DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $all" ]
check "empty machine: nothing else asked" [ "$(wc -l <"$tmp/empty.log")" -eq 2 ]
check "empty machine: says what it installs" \
  grep -q "^install-deps: installing $all\$" "$tmp/empty.err"
check "empty machine: everything installed afterwards" \
  [ "$(wc -l <"$tmp/empty.state")" -eq "$n_all" ]

# ---- Everything installed: apt-get is never run. --------------------
for p in $all; do echo "$p install ok installed"; done >"$tmp/full.state"
run full
check "full machine: exit 0" [ "$rc" -eq 0 ]
check "full machine: apt-get not run" [ ! -s "$tmp/full.log" ]

# ---- Everything installed, each with a long description: the status
# is read whole, never taken for "not installed". --------------------
cp "$tmp/full.state" "$tmp/long.state"
run long LONG=1
check "long descriptions: exit 0" [ "$rc" -eq 0 ]
check "long descriptions: apt-get not run" [ ! -s "$tmp/long.log" ]

# ---- One package removed with its configuration left, one missing. --
first=${all%% *}
last=${all##* }
for p in $all; do
  case $p in
  "$first") echo "$p deinstall ok config-files" ;;
  "$last") ;;
  *) echo "$p install ok installed" ;;
  esac
done >"$tmp/partial.state"
run partial
check "partial machine: exit 0" [ "$rc" -eq 0 ]
check "partial machine: installs exactly the two" \
  grep -qx "direct DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $first $last" \
  "$tmp/partial.log"

# ---- The install fails: exit 1 and the reason. ----------------------
run fails FAIL_INSTALL=1
check "failing install: exit 1" [ "$rc" -eq 1 ]
check "failing install: says it failed and for what" \
  grep -q "^install-deps: apt-get install failed .* for: $all\$" "$tmp/fails.err"

# ---- apt-get update fails (stale lists): the install is still tried. --
run stale FAIL_UPDATE=1
check "failing update: install tried, exit 0" [ "$rc" -eq 0 ]
check "failing update: warned" grep -q "apt-get update failed" "$tmp/stale.err"

# ---- apt-get says yes but installs nothing: exit 1. -----------------
run forgetful FORGET=1
check "install that installs nothing: exit 1" [ "$rc" -eq 1 ]
check "install that installs nothing: names the packages" \
  grep -q "still not installed: $all\$" "$tmp/forgetful.err"

# ---- Not root: through sudo. -----------------------------------------
run user FAKE_UID=1000
check "user with sudo: exit 0" [ "$rc" -eq 0 ]
check "user with sudo: apt-get through sudo" \
  grep -q "^sudo DEBIAN_FRONTEND=noninteractive apt-get install" "$tmp/user.log"

# ---- Not root and no sudo: exit 1 with what to run. -----------------
: >"$tmp/nosudo.log"
env PATH="$nosudo" STATE="$tmp/nosudo.state" LOG="$tmp/nosudo.log" \
  FAKE_UID=1000 "$nosudo/bash" "$deps" >/dev/null 2>"$tmp/nosudo.err"
rc=$?
check "user without sudo: exit 1" [ "$rc" -eq 1 ]
check "user without sudo: apt-get not run" [ ! -s "$tmp/nosudo.log" ]
check "user without sudo: says what to run as root" \
  grep -q "apt-get install $first" "$tmp/nosudo.err"

# ---- ./bootstrap itself stops loudly when the install fails. ---------
# A copy of the two scripts, so that nothing is built in the source tree.
mkdir -p "$tmp/tree/build-aux"
cp "$srcdir/bootstrap" "$tmp/tree/"
cp "$deps" "$tmp/tree/build-aux/"
: >"$tmp/boot.log"
env PATH="$bin:$PATH" STATE="$tmp/boot.state" LOG="$tmp/boot.log" \
  FAIL_INSTALL=1 "$tmp/tree/bootstrap" >/dev/null 2>"$tmp/boot.err"
rc=$?
check "bootstrap on a failing install: nonzero exit" [ "$rc" -ne 0 ]
check "bootstrap on a failing install: says so" \
  grep -q "^bootstrap: .*could not be installed" "$tmp/boot.err"
check "bootstrap on a failing install: nothing configured" \
  [ ! -e "$tmp/tree/config.status" ]

echo "bootstrap: $pass checks passed, $fail failed"
[ "$fail" -eq 0 ]
