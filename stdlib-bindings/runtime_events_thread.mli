(* runtime_events_thread.mli -- the names of a program's threads in its
   trace.  A module of its own, as Runtime_events_snapshot is, so that
   [Runtime_events] stays OCaml 5's interface: code that uses this module
   is written for eventring, and does not compile with OCaml 5's runtime.

   OCaml 4 runs its threads one at a time under the runtime lock, and all
   of them write into ring 0.  So that a trace can still show each thread
   apart, the first event of each turn of a thread in ring 0 (when the
   thread that writes is not the one that wrote last) is preceded by a
   thread-switch marker carrying the thread's id ([Thread.id
   (Thread.self ())], found by the package itself when the program links
   [threads]) and the name given here: [eventring trace] then draws each
   thread on a track of its own, named "NAME, thread ID (domain 0)",
   and [eventring dump] lists the markers (kind [thread]).  OCaml 5's
   readers skip the markers. *)

val set_name : string -> unit
(** [set_name name] names the calling thread in the trace from its next
    event on (an empty name: none).  A thread never named shows as
    "thread ID".  Costs nothing while tracing is off; names may be given
    before tracing starts.  Raises [Invalid_argument] when [name] is
    longer than 63 bytes or has a NUL byte. *)
