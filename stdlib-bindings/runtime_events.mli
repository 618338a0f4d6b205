(* runtime_events.mli -- OCaml 5's Runtime_events interface for OCaml 4.13,
   written over eventring.  Code written against this interface compiles
   unchanged with OCaml 5.3 and later.

   Differences from OCaml 5 that a program can observe:
   - The GC of 4.13 is not OCaml 5's: the normal runtime reports the phases
     minor, major_slice, major (a whole cycle), major_gc_phase_change and
     finalise_update_first (around the running of finalisers), with the
     counters minor_allocated, minor_promoted (bytes), major_allocated_words
     and major_heap_words; the instrumented runtime ([-runtime-variant i])
     reports more (doc/ocaml4-mapping.md).
   - Every OCaml thread writes into ring 0, as OCaml 5's threads of one
     domain do.  A thread-switch marker (the thread's [Thread.id] and the
     name [Runtime_events_thread.set_name] gave it) precedes each change
     of writer, so that eventring's tools draw each thread apart; OCaml
     5's readers, and [read_poll], call no callback for the markers
     (though they count in [read_poll]'s result, as OCaml 5's reader
     counts every event but padding).
   - The [int array] given to an [alloc] callback is reused by the next
     alloc event of the same cursor: copy it to keep it.
   - Lost events are counted in events for eventring's files and in ring
     words for OCaml 5's files, as OCaml 5's reader counts them. *)

(** {1 Events of the runtime} *)

(** Counters, numbered as OCaml 5.3 numbers them. *)
type runtime_counter =
  | EV_C_FORCE_MINOR_ALLOC_SMALL
  | EV_C_FORCE_MINOR_MAKE_VECT
  | EV_C_FORCE_MINOR_SET_MINOR_HEAP_SIZE
  | EV_C_FORCE_MINOR_MEMPROF
  | EV_C_MINOR_PROMOTED
  | EV_C_MINOR_ALLOCATED
  | EV_C_REQUEST_MAJOR_ALLOC_SHR
  | EV_C_REQUEST_MAJOR_ADJUST_GC_SPEED
  | EV_C_REQUEST_MINOR_REALLOC_REF_TABLE
  | EV_C_REQUEST_MINOR_REALLOC_EPHE_REF_TABLE
  | EV_C_REQUEST_MINOR_REALLOC_CUSTOM_TABLE
  | EV_C_MAJOR_HEAP_POOL_WORDS
  | EV_C_MAJOR_HEAP_POOL_LIVE_WORDS
  | EV_C_MAJOR_HEAP_LARGE_WORDS
  | EV_C_MAJOR_HEAP_POOL_FRAG_WORDS
  | EV_C_MAJOR_HEAP_POOL_LIVE_BLOCKS
  | EV_C_MAJOR_HEAP_LARGE_BLOCKS
  | EV_C_MAJOR_HEAP_WORDS
  | EV_C_MAJOR_ALLOCATED_WORDS
  | EV_C_MAJOR_ALLOCATED_WORK
  | EV_C_MAJOR_DEPENDENT_WORK
  | EV_C_MAJOR_EXTRA_WORK
  | EV_C_MAJOR_WORK_COUNTER
  | EV_C_MAJOR_ALLOC_COUNTER
  | EV_C_MAJOR_SLICE_TARGET
  | EV_C_MAJOR_SLICE_BUDGET

(** Phases (spans of the runtime), numbered as OCaml 5.3 and later number
    them; files of OCaml 5.0 to 5.2, which number them differently, are
    read as 5.3 files. *)
type runtime_phase =
  | EV_EXPLICIT_GC_SET
  | EV_EXPLICIT_GC_STAT
  | EV_EXPLICIT_GC_MINOR
  | EV_EXPLICIT_GC_MAJOR
  | EV_EXPLICIT_GC_FULL_MAJOR
  | EV_EXPLICIT_GC_COMPACT
  | EV_MAJOR
  | EV_MAJOR_SWEEP
  | EV_MAJOR_MARK_ROOTS
  | EV_MAJOR_MEMPROF_ROOTS
  | EV_MAJOR_MARK
  | EV_MINOR
  | EV_MINOR_LOCAL_ROOTS
  | EV_MINOR_MEMPROF_ROOTS
  | EV_MINOR_MEMPROF_CLEAN
  | EV_MINOR_FINALIZED
  | EV_EXPLICIT_GC_MAJOR_SLICE
  | EV_FINALISE_UPDATE_FIRST
  | EV_FINALISE_UPDATE_LAST
  | EV_INTERRUPT_REMOTE
  | EV_MAJOR_EPHE_MARK
  | EV_MAJOR_EPHE_SWEEP
  | EV_MAJOR_FINISH_MARKING
  | EV_MAJOR_GC_CYCLE_DOMAINS
  | EV_MAJOR_GC_PHASE_CHANGE
  | EV_MAJOR_GC_STW
  | EV_MAJOR_MARK_OPPORTUNISTIC
  | EV_MAJOR_SLICE
  | EV_MAJOR_FINISH_CYCLE
  | EV_MINOR_CLEAR
  | EV_MINOR_FINALIZERS_OLDIFY
  | EV_MINOR_GLOBAL_ROOTS
  | EV_MINOR_LEAVE_BARRIER
  | EV_STW_API_BARRIER
  | EV_STW_HANDLER
  | EV_STW_LEADER
  | EV_MAJOR_FINISH_SWEEPING
  | EV_MAJOR_MEMPROF_CLEAN
  | EV_MINOR_FINALIZERS_ADMIN
  | EV_MINOR_REMEMBERED_SET
  | EV_MINOR_REMEMBERED_SET_PROMOTE
  | EV_MINOR_LOCAL_ROOTS_PROMOTE
  | EV_DOMAIN_CONDITION_WAIT
  | EV_DOMAIN_RESIZE_HEAP_RESERVATION
  | EV_COMPACT
  | EV_COMPACT_EVACUATE
  | EV_COMPACT_FORWARD
  | EV_COMPACT_RELEASE
  | EV_EMPTY_MINOR

(** Changes in the life of a ring file and of its rings. *)
type lifecycle =
  | EV_RING_START  (** tracing started; data: the process id *)
  | EV_RING_STOP  (** tracing stopped *)
  | EV_RING_PAUSE
  | EV_RING_RESUME
  | EV_FORK_PARENT  (** data: the child's process id *)
  | EV_FORK_CHILD  (** first event of a forked child's own file *)
  | EV_DOMAIN_SPAWN  (** a thread took this ring *)
  | EV_DOMAIN_TERMINATE  (** the last thread of this ring left it *)

val lifecycle_name : lifecycle -> string
val runtime_phase_name : runtime_phase -> string
val runtime_counter_name : runtime_counter -> string
(** The names OCaml 5 gives them ("minor", "major_slice", ...). *)

type cursor
(** A reader of one ring file: of this process or of another one. *)

module Timestamp : sig
  type t
  (** Nanoseconds of CLOCK_MONOTONIC.  Only differences mean something.
      Unboxed: reading events allocates no timestamp. *)

  val to_int64 : t -> int64

  val get_current : unit -> t
  (** The current timestamp, on the clock of the events. *)
end

module Type : sig
  type 'a t
  (** What a user event carries. *)

  val unit : unit t

  type span = Begin | End

  val span : span t
  val int : int t

  val register :
    encode:(bytes -> 'a -> int) -> decode:(bytes -> int -> 'a) -> 'a t
  (** A custom type.  [encode buf v] writes [v] into [buf] (1024 bytes)
      and returns the number of bytes written; [decode buf len] reads a
      value back from the first [len] bytes of [buf], which is reused for
      the next event. *)
end

module User : sig
  type tag = ..
  (** Tells apart user events of the same type. *)

  type 'value t
  (** A user event: a name, a tag and the type of its values. *)

  val register : string -> tag -> 'value Type.t -> 'value t
  (** [register name tag ty] registers the event [name] (1 to 127 bytes,
      no NUL; up to 8192 names per process).  Raises [Invalid_argument]
      otherwise, or when [name] is already registered with another kind of
      type (unit, int, span, custom). *)

  val write : 'value t -> 'value -> unit
  (** Writes one event; does nothing unless tracing is started and not
      paused.  For a custom type, raises [Invalid_argument] when the
      encoder returns a length outside [0, 1024]. *)

  val name : _ t -> string

  val tag : 'a t -> tag
  (** The tag given at registration.  An event that a reader meets but
      did not register itself has an unknown tag, distinct from every tag
      a program declares. *)
end

module Callbacks : sig
  type t
  (** What to call for each kind of event.  The first argument of every
      callback is the ring (domain) index. *)

  val create :
    ?runtime_begin:(int -> Timestamp.t -> runtime_phase -> unit) ->
    ?runtime_end:(int -> Timestamp.t -> runtime_phase -> unit) ->
    ?runtime_counter:(int -> Timestamp.t -> runtime_counter -> int -> unit) ->
    ?alloc:(int -> Timestamp.t -> int array -> unit) ->
    ?lifecycle:(int -> Timestamp.t -> lifecycle -> int option -> unit) ->
    ?lost_events:(int -> int -> unit) ->
    unit -> t

  val add_user_event :
    'a Type.t -> (int -> Timestamp.t -> 'a User.t -> 'a -> unit) -> t -> t
  (** [add_user_event ty f cbs] also calls [f] for the user events of type
      [ty].  Events of unit, int and span types reach [f] even when the
      reader did not register their name (with an unknown tag); events of a
      custom type reach it only when the reader registered their name with
      that type, which provides the decoder. *)
end

val start : unit -> unit
(** Starts tracing (creating [<dir>/<pid>.events]) unless it is started.
    Raises [Failure] when the file cannot be created. *)

val path : unit -> string option
(** The path of this process's ring file while tracing is started. *)

val pause : unit -> unit
val resume : unit -> unit

val create_cursor : (string * int) option -> cursor
(** [create_cursor None] reads this process's events (tracing must be
    started); [create_cursor (Some (dir, pid))] reads [dir/pid.events].
    Raises [Failure] when the file cannot be opened or is not a valid ring
    file. *)

val free_cursor : cursor -> unit
(** Releases the cursor; freeing it twice does nothing. *)

val read_poll : cursor -> Callbacks.t -> int option -> int
(** [read_poll cursor callbacks max] calls [callbacks] for up to [max]
    events ([None]: all that are there) and returns the number of events
    read.  An exception raised by a callback ends the poll and is raised
    again.  Raises [Failure] when the file is corrupt, [Invalid_argument]
    on a freed cursor or a negative [max]. *)
