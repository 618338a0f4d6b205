(* runtime_events_snapshot.mli -- the flight recorder's snapshot, taken by
   the traced program itself: eventring_snapshot() (eventring(3)) for
   OCaml.  A module of its own, so that [Runtime_events] stays OCaml 5's
   interface: code that uses this module is written for eventring, and
   does not compile with OCaml 5's runtime. *)

val write : string -> unit
(** [write path] writes what this process's rings hold now into the new
    file [path]: a compact ring file (the same format as the ring file,
    each ring sized to what it holds, with the names of the user events,
    the pid and the program name), which [eventring] reads as it reads a
    live file, and [Runtime_events.create_cursor (Some (dir, pid))] too
    when [path] is [dir/pid.events].  It is what a program calls when it
    detects its own anomaly (a request that took too long, an assertion
    about to fail), to keep the last moments of every thread and of the
    GC before the rings wrap over them.

    Tracing must be started ([Runtime_events.start], or
    [OCAML_RUNTIME_EVENTS_START=1] with the package [runtime_events.auto]).
    The other threads run on during the copy (the runtime lock is
    released): the events they overwrite meanwhile are counted as lost in
    the snapshot, never copied torn.  The file is created as the ring file
    is: mode 0600, never over an existing file or through a symbolic link.
    Not for signal handlers written in C (eventring_snapshot() is not
    async-signal-safe); OCaml's [Sys.signal] handlers run outside the
    signal and may call it.

    Raises [Failure "Runtime_events_snapshot.write: PATH: REASON"] when
    tracing is not started, when [path] exists (the file is left as it
    is), or when the file cannot be written (the part written is
    removed), and [Invalid_argument] when [path] is empty or has a NUL
    byte. *)

val write_default : unit -> string
(** [write_default ()] writes the snapshot as [write] does, into the
    current directory under the name [eventring snapshot] gives it,
    [PROGRAM-PID-TIME.events] (TIME in UTC to the millisecond, as in
    [prog-4242-20261124T031500.123Z.events]; PROGRAM is the name the ring
    file records, [ocamlrun] for a plain bytecode program), and returns
    that name.  When that name is taken (a snapshot in the same
    millisecond), [-2], [-3]... follow TIME.  Raises [Failure
    "Runtime_events_snapshot.write_default: NAME: REASON"]. *)
