(* Every function of the Runtime_events interface, in one process: names,
   timestamps, start/path/pause/resume seen through a cursor on this
   process, read_poll's limit, user events of every type, callbacks of
   every kind, exceptions raised by a callback, free_cursor. *)

module R = Runtime_events

type R.User.tag += Tick | Count | Span | Blob

let blob =
  R.Type.register
    ~encode:(fun buf (a, b) -> Bytes.set_int64_le buf 0 (Int64.of_int a);
              Bytes.set_int64_le buf 8 (Int64.of_int b); 16)
    ~decode:(fun buf len ->
        assert (len = 16);
        (Int64.to_int (Bytes.get_int64_le buf 0),
         Int64.to_int (Bytes.get_int64_le buf 8)))

let tick = R.User.register "api.tick" Tick R.Type.unit
let count = R.User.register "api.count" Count R.Type.int
let span = R.User.register "api.span" Span R.Type.span
let pair = R.User.register "api.pair" Blob blob

let () =
  print_endline "names:";
  Printf.printf "  %s %s %s %s\n" (R.runtime_phase_name R.EV_MINOR)
    (R.runtime_phase_name R.EV_MAJOR_SLICE)
    (R.runtime_phase_name R.EV_COMPACT_RELEASE)
    (R.runtime_phase_name R.EV_EMPTY_MINOR);
  Printf.printf "  %s %s %s\n" (R.runtime_counter_name R.EV_C_MINOR_PROMOTED)
    (R.runtime_counter_name R.EV_C_MAJOR_HEAP_WORDS)
    (R.runtime_counter_name R.EV_C_MAJOR_SLICE_BUDGET);
  Printf.printf "  %s %s\n" (R.lifecycle_name R.EV_RING_START)
    (R.lifecycle_name R.EV_DOMAIN_TERMINATE);
  Printf.printf "user: %s %s %s %s, tags %b\n" (R.User.name tick)
    (R.User.name count) (R.User.name span) (R.User.name pair)
    (R.User.tag tick = Tick && R.User.tag pair = Blob);
  let t0 = R.Timestamp.get_current () in
  let t1 = R.Timestamp.get_current () in
  Printf.printf "timestamps: %b\n"
    (Int64.compare (R.Timestamp.to_int64 t1) (R.Timestamp.to_int64 t0) >= 0);
  Printf.printf "path before start: %b\n" (R.path () = None);
  (* Writing while tracing is off does nothing (and does not encode). *)
  R.User.write count 1;
  R.start ();
  R.start ();
  let dir = Sys.getenv "OCAML_RUNTIME_EVENTS_DIR" in
  Printf.printf "path: %b\n"
    (R.path () = Some (Printf.sprintf "%s/%d.events" dir (Unix.getpid ())));
  let c = R.create_cursor None in
  let log = ref [] in
  let gc_events = ref 0 in
  let add s = log := s :: !log in
  let last_ts = ref (R.Timestamp.get_current ()) in
  let cbs =
    R.Callbacks.create
      (* GC events come when the GC runs, so they are only counted. *)
      ~runtime_begin:(fun _ _ _ -> incr gc_events)
      ~runtime_end:(fun _ _ _ -> incr gc_events)
      ~runtime_counter:(fun _ _ _ v -> if v < 0 then add "negative counter")
      ~alloc:(fun _ _ _ -> add "alloc")
      ~lifecycle:(fun d ts l v ->
          last_ts := ts;
          add (Printf.sprintf "%d %s %s" d (R.lifecycle_name l)
                 (match l, v with
                  | R.EV_RING_START, Some p when p = Unix.getpid () -> "(pid)"
                  | _, None -> "None" | _, Some _ -> "Some")))
      ~lost_events:(fun _ n -> add (Printf.sprintf "lost %d" n))
      ()
    |> R.Callbacks.add_user_event R.Type.unit (fun d _ ev () ->
        add (Printf.sprintf "%d %s" d (R.User.name ev)))
    |> R.Callbacks.add_user_event R.Type.int (fun _ _ ev v ->
        add (Printf.sprintf "%s = %d" (R.User.name ev) v))
    |> R.Callbacks.add_user_event R.Type.span (fun _ _ ev v ->
        add (Printf.sprintf "%s %s" (R.User.name ev)
               (if v = R.Type.Begin then "begin" else "end")))
    |> R.Callbacks.add_user_event blob (fun _ _ ev (a, b) ->
        add (Printf.sprintf "%s (%d, %d)" (R.User.name ev) a b))
  in
  let flush title =
    ignore (R.read_poll c cbs None);
    Printf.printf "%s:\n" title;
    List.iter (Printf.printf "  %s\n") (List.rev !log);
    log := []
  in
  R.User.write tick ();
  R.User.write count (-42);
  R.User.write count max_int;
  R.User.write span R.Type.Begin;
  R.User.write pair (3, 4);
  R.User.write span R.Type.End;
  flush "first poll";
  R.pause ();
  R.pause ();
  R.User.write tick ();
  R.resume ();
  R.resume ();
  R.User.write tick ();
  flush "pause and resume";
  for i = 1 to 5 do R.User.write count i done;
  Printf.printf "read_poll (Some 2) = %d\n" (R.read_poll c cbs (Some 2));
  Printf.printf "read_poll (Some 2) = %d\n" (R.read_poll c cbs (Some 2));
  flush "the rest";
  (* A callback's exception stops the poll after its event. *)
  R.User.write count 100;
  R.User.write count 101;
  let raising =
    R.Callbacks.add_user_event R.Type.int
      (fun _ _ _ v -> raise (Failure (string_of_int v)))
      (R.Callbacks.create ())
  in
  (match R.read_poll c raising None with
   | _ -> print_endline "no exception"
   | exception Failure s -> Printf.printf "exception from callback: %s\n" s);
  flush "after the exception";
  (* A minor collection, seen by the GC probes. *)
  ignore (Sys.opaque_identity (Array.make 10 (ref 0)));
  Gc.minor ();
  let phases = ref [] in
  let cbs2 =
    R.Callbacks.create
      ~runtime_begin:(fun d _ p -> phases := (d, R.runtime_phase_name p) :: !phases) ()
  in
  ignore (R.read_poll c cbs2 None);
  Printf.printf "minor seen on domain 0: %b\n" (List.mem (0, "minor") !phases);
  ignore !gc_events;
  R.free_cursor c;
  R.free_cursor c;
  print_endline "freed twice"
