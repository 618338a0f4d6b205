(* runtime_events.ml -- OCaml 5's Runtime_events for OCaml 4.13, over
   eventring (runtime_events_stubs.c does the C side; the interface says
   what differs from OCaml 5). *)

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

type lifecycle =
  | EV_RING_START
  | EV_RING_STOP
  | EV_RING_PAUSE
  | EV_RING_RESUME
  | EV_FORK_PARENT
  | EV_FORK_CHILD
  | EV_DOMAIN_SPAWN
  | EV_DOMAIN_TERMINATE

(* Constant constructors are their index, which is also their number in
   the file format: the names come from the C library's tables, the one
   definition of the vocabulary. *)
external phase_index : runtime_phase -> int = "%identity"
external counter_index : runtime_counter -> int = "%identity"
external lifecycle_index : lifecycle -> int = "%identity"
external raw_name : int -> int -> string = "caml_eventring_ml_name"

let phase_names = Array.init 49 (raw_name 0)
let counter_names = Array.init 26 (raw_name 1)
let lifecycle_names = Array.init 8 (raw_name 2)

let runtime_phase_name p = phase_names.(phase_index p)
let runtime_counter_name c = counter_names.(counter_index c)
let lifecycle_name l = lifecycle_names.(lifecycle_index l)

module Timestamp = struct
  type t = int

  let to_int64 = Int64.of_int

  external get_current : unit -> t = "caml_eventring_ml_timestamp"
    [@@noalloc]
end

module Type = struct
  type span = Begin | End

  type 'a custom = {
    encode : bytes -> 'a -> int;
    decode : bytes -> int -> 'a;
    cid : int;  (* tells custom types apart in Callbacks *)
  }

  type 'a t =
    | Unit : unit t
    | Int : int t
    | Span : span t
    | Custom : 'a custom -> 'a t

  let unit = Unit
  let int = Int
  let span = Span

  (* No allocation between the read and the write: no other thread can
     run in between. *)
  let next_cid = ref 0

  let register ~encode ~decode =
    incr next_cid;
    Custom { encode; decode; cid = !next_cid }

  (* eventring's type codes (eventring.h, enum eventring_type). *)
  let code : type a. a t -> int = function
    | Unit -> 0
    | Int -> 1
    | Span -> 2
    | Custom _ -> 4
end

external is_active : unit -> bool = "caml_eventring_ml_is_active" [@@noalloc]

module User = struct
  type tag = ..

  (* The tag of events a reader meets without having registered them. *)
  type tag += Unknown_event

  type 'a t = { id : int; name : string; typ : 'a Type.t; tag : tag }

  type any = Any : 'a t -> any

  (* Every event this process registered, by name: readers resolve the
     events of a file through it, since another process's ids differ. *)
  let registry : (string, any) Hashtbl.t = Hashtbl.create 16

  external register_raw : string -> int -> int = "caml_eventring_ml_register"
  external write_unit : int -> unit = "caml_eventring_ml_write_unit"
    [@@noalloc]
  external write_int : int -> int -> unit = "caml_eventring_ml_write_int"
    [@@noalloc]
  external write_span : int -> Type.span -> unit
    = "caml_eventring_ml_write_span" [@@noalloc]
  external write_custom : int -> bytes -> int -> unit
    = "caml_eventring_ml_write_custom" [@@noalloc]

  let register name tag typ =
    let id = register_raw name (Type.code typ) in
    let ev = { id; name; typ; tag } in
    Hashtbl.replace registry name (Any ev);
    ev

  (* Encoding buffers, taken and given back around each custom write so
     that a thread switch inside an encoder cannot share one. *)
  let buffers = ref []

  let write_encoded ev (c : _ Type.custom) v =
    let buf =
      match !buffers with
      | b :: rest -> buffers := rest; b
      | [] -> Bytes.create 1024
    in
    let give_back () = buffers := buf :: !buffers in
    match c.encode buf v with
    | len when len >= 0 && len <= Bytes.length buf ->
        write_custom ev.id buf len;
        give_back ()
    | _ ->
        give_back ();
        invalid_arg
          "Runtime_events.User.write: the encoder returned a length outside \
           [0, 1024]"
    | exception e -> give_back (); raise e

  let write : type a. a t -> a -> unit =
   fun ev v ->
    match ev.typ with
    | Type.Unit -> write_unit ev.id
    | Type.Int -> write_int ev.id v
    | Type.Span -> write_span ev.id v
    | Type.Custom c -> if is_active () then write_encoded ev c v

  let name ev = ev.name
  let tag ev = ev.tag
end

module Callbacks = struct
  type 'a user_cb = int -> Timestamp.t -> 'a User.t -> 'a -> unit

  type custom_cb = C : 'a Type.custom * 'a user_cb -> custom_cb

  (* runtime_events_stubs.c reads the first seven fields by position. *)
  type t = {
    runtime_begin : (int -> Timestamp.t -> runtime_phase -> unit) option;
    runtime_end : (int -> Timestamp.t -> runtime_phase -> unit) option;
    runtime_counter :
      (int -> Timestamp.t -> runtime_counter -> int -> unit) option;
    alloc : (int -> Timestamp.t -> int array -> unit) option;
    lifecycle : (int -> Timestamp.t -> lifecycle -> int option -> unit) option;
    lost_events : (int -> int -> unit) option;
    has_user : bool;
    on_unit : unit user_cb list;
    on_int : int user_cb list;
    on_span : Type.span user_cb list;
    on_custom : custom_cb list;
  }

  let create ?runtime_begin ?runtime_end ?runtime_counter ?alloc ?lifecycle
      ?lost_events () =
    { runtime_begin; runtime_end; runtime_counter; alloc; lifecycle;
      lost_events; has_user = false; on_unit = []; on_int = []; on_span = [];
      on_custom = [] }

  let add_user_event : type a. a Type.t -> a user_cb -> t -> t =
   fun ty f t ->
    let t = { t with has_user = true } in
    match ty with
    | Type.Unit -> { t with on_unit = f :: t.on_unit }
    | Type.Int -> { t with on_int = f :: t.on_int }
    | Type.Span -> { t with on_span = f :: t.on_span }
    | Type.Custom c -> { t with on_custom = C (c, f) :: t.on_custom }
end

external start : unit -> unit = "caml_eventring_ml_start"
external pause : unit -> unit = "caml_eventring_ml_pause"
external resume : unit -> unit = "caml_eventring_ml_resume"
external path : unit -> string option = "caml_eventring_ml_path"

(* ------------------------------------------------------------------ *)
(* Reading.                                                             *)

type raw_cursor

(* How a file's user event id resolved, cached per cursor. *)
type resolved =
  | Unresolved
  | Ignored
  | R_unit of unit User.t
  | R_int of int User.t
  | R_span of Type.span User.t
  | R_custom : 'a User.t * 'a Type.custom -> resolved

(* runtime_events_stubs.c reads fields 0, 2, 3 and 4 by position. *)
type cursor = {
  raw : raw_cursor;
  cache : resolved array;  (* by the file's user event id *)
  buf : bytes;  (* custom payloads, reused *)
  buckets : int array;  (* alloc events, reused *)
  ev : int array;
      (* The event being delivered, for the callbacks of four arguments:
         domain, timestamp, id, kind, value.  The C side fills it and calls
         one of the trampolines below with two arguments, because calling
         a closure of more than three arguments from C builds partial
         applications on the heap, and an OCaml call does not. *)
}

external create_raw : (string * int) option -> raw_cursor
  = "caml_eventring_ml_create_cursor"
external free_raw : raw_cursor -> unit = "caml_eventring_ml_free_cursor"
external user_name : raw_cursor -> int -> string = "caml_eventring_ml_user_name"
external poll : cursor -> Callbacks.t -> int -> int
  = "caml_eventring_ml_read_poll"

let max_user_events = 8192
let max_custom_bytes = 1021 * 8 - 1

let create_cursor target =
  { raw = create_raw target;
    cache = Array.make max_user_events Unresolved;
    buf = Bytes.create max_custom_bytes;
    buckets = Array.make 20 0;
    ev = Array.make 5 0 }

let free_cursor c = free_raw c.raw

(* kind: 0 unit, 1 int, 2 span begin, 3 span end, 4 custom. *)
let resolve cur id kind =
  let name = user_name cur.raw id in
  let known = Hashtbl.find_opt User.registry name in
  let unknown typ = { User.id; name; typ; tag = User.Unknown_event } in
  if name = "" then Ignored
  else
    match kind, known with
    | 0, Some (User.Any ({ User.typ = Type.Unit; _ } as ev)) -> R_unit ev
    | 0, _ -> R_unit (unknown Type.Unit)
    | 1, Some (User.Any ({ User.typ = Type.Int; _ } as ev)) -> R_int ev
    | 1, _ -> R_int (unknown Type.Int)
    | (2 | 3), Some (User.Any ({ User.typ = Type.Span; _ } as ev)) -> R_span ev
    | (2 | 3), _ -> R_span (unknown Type.Span)
    | 4, Some (User.Any ({ User.typ = Type.Custom c; _ } as ev)) ->
        R_custom (ev, c)
    | _ -> Ignored

(* Top-level loops, so that dispatching allocates no closure. *)
let rec call_unit l d ts ev =
  match l with [] -> () | f :: r -> f d ts ev (); call_unit r d ts ev

let rec call_int l d ts ev v =
  match l with [] -> () | f :: r -> f d ts ev v; call_int r d ts ev v

let rec call_span l d ts ev v =
  match l with [] -> () | f :: r -> f d ts ev v; call_span r d ts ev v

let rec call_custom :
    type a. Callbacks.custom_cb list -> a Type.custom -> int -> Timestamp.t
    -> a User.t -> a Lazy.t -> unit =
 fun l c d ts ev v ->
  match l with
  | [] -> ()
  | Callbacks.C (c', f) :: r ->
      (* Equal ids mean the same registration, hence the same type. *)
      if c'.Type.cid = c.Type.cid then
        (Obj.magic f : a Callbacks.user_cb) d ts ev (Lazy.force v);
      call_custom r c d ts ev v

external counter_of_index : int -> runtime_counter = "%identity"
external lifecycle_of_index : int -> lifecycle = "%identity"

(* The C side checked the indexes against the sizes of the types. *)
let counter_trampoline cur (cbs : Callbacks.t) =
  match cbs.runtime_counter with
  | Some f ->
      let e = cur.ev in
      f (Array.unsafe_get e 0) (Array.unsafe_get e 1)
        (counter_of_index (Array.unsafe_get e 2)) (Array.unsafe_get e 4)
  | None -> ()

let lifecycle_trampoline cur (cbs : Callbacks.t) data =
  match cbs.lifecycle with
  | Some f ->
      let e = cur.ev in
      f (Array.unsafe_get e 0) (Array.unsafe_get e 1)
        (lifecycle_of_index (Array.unsafe_get e 2)) data
  | None -> ()

let dispatch cur (cbs : Callbacks.t) =
  let e = cur.ev in
  let d = Array.unsafe_get e 0 and ts = Array.unsafe_get e 1
  and id = Array.unsafe_get e 2 and kind = Array.unsafe_get e 3
  and v = Array.unsafe_get e 4 in
  if id >= 0 && id < Array.length cur.cache then begin
    let r =
      match cur.cache.(id) with
      | Unresolved ->
          let r = resolve cur id kind in
          cur.cache.(id) <- r;
          r
      | r -> r
    in
    match r with
    | R_unit ev when kind = 0 -> call_unit cbs.on_unit d ts ev
    | R_int ev when kind = 1 -> call_int cbs.on_int d ts ev v
    | R_span ev when kind = 2 -> call_span cbs.on_span d ts ev Type.Begin
    | R_span ev when kind = 3 -> call_span cbs.on_span d ts ev Type.End
    | R_custom (ev, c) when kind = 4 && cbs.on_custom <> [] ->
        (* Decoded once, and only when some callback wants this type. *)
        let buf = cur.buf in
        call_custom cbs.on_custom c d ts ev (lazy (c.Type.decode buf v))
    | _ -> ()
  end

let read_poll cur cbs max =
  let n =
    match max with
    | None -> 0
    | Some n when n < 0 ->
        invalid_arg "Runtime_events.read_poll: negative maximum"
    | Some n -> n
  in
  poll cur cbs n

(* The executable's name goes into the ring file as the program's: a
   bytecode program's process is ocamlrun's. *)
external init : string -> unit = "caml_eventring_ml_init"

let () =
  Callback.register "Runtime_events.user" dispatch;
  Callback.register "Runtime_events.counter" counter_trampoline;
  Callback.register "Runtime_events.lifecycle" lifecycle_trampoline;
  init Sys.executable_name
