(* Systhreads that are known to interleave, each on a track of its own in
   the trace: a mutex hand-off (two threads take turns, each waiting for
   the other), Thread.yield, and a thread blocked in a pipe read while the
   others run.  Every thread names itself (Runtime_events_thread) and
   writes spans of its own name; thread_tracks.check reads the trace.
   Prints each thread's name and Thread.id, so that the check knows which
   track is whose. *)

module R = Runtime_events

type R.User.tag += Work

let spans = Hashtbl.create 8

let span name =
  match Hashtbl.find_opt spans name with
  | Some ev -> ev
  | None ->
      let ev = R.User.register (name ^ ".work") Work R.Type.span in
      Hashtbl.add spans name ev;
      ev

let work name f =
  let ev = span name in
  R.User.write ev R.Type.Begin;
  f ();
  R.User.write ev R.Type.End

let announce name =
  Runtime_events_thread.set_name name;
  (* One output call: printf writes its pieces one by one, and another
     thread's line could land between them. *)
  print_string (Printf.sprintf "thread %s %d\n" name (Thread.id (Thread.self ())));
  flush stdout

(* The hand-off: [turn] says whose turn it is; each side writes a span
   in its turn, then hands over and waits for its next one. *)
let m = Mutex.create ()
let c = Condition.create ()
let turn = ref 0
let rounds = 20

let take_turns me name =
  for _ = 1 to rounds do
    Mutex.lock m;
    while !turn <> me do Condition.wait c m done;
    work name (fun () -> ignore (Sys.opaque_identity (Array.make 50 me)));
    turn := 1 - me;
    Condition.broadcast c;
    Mutex.unlock m
  done

let () =
  let span_names = [ "main"; "handoff"; "yielder"; "reader" ] in
  List.iter (fun n -> ignore (span n)) span_names;
  announce "main";
  let rd, wr = Unix.pipe () in
  let reader =
    Thread.create
      (fun () ->
        announce "reader";
        let buf = Bytes.create 1 in
        (* Blocks (the runtime lock released) until main writes. *)
        work "reader" (fun () -> ignore (Unix.read rd buf 0 1));
        work "reader" (fun () -> ()))
      ()
  in
  let yielder =
    Thread.create
      (fun () ->
        announce "yielder";
        for _ = 1 to 20 do
          work "yielder" Thread.yield
        done)
      ()
  in
  let handoff =
    Thread.create
      (fun () ->
        announce "handoff";
        take_turns 1 "handoff")
      ()
  in
  take_turns 0 "main";
  Thread.join handoff;
  Thread.join yielder;
  ignore (Unix.write_substring wr "x" 0 1);
  Thread.join reader;
  work "main" (fun () -> ())
