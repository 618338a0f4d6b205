(* User spans for `eventring latency --span` and `eventring stats` on
   OCaml 4.13: spans of "req" whose lengths are at least known sleeps
   (20 ms and 60 ms, one of them nested in another of the same name),
   and two threads whose turns are forced so that their spans of "x"
   interleave on domain 0: each pairs on its thread's track, which
   leaves one unfinished and one unmatched end (lat_spans.check). *)

module R = Runtime_events

type R.User.tag += Req | X | Depth | Tick

let req = R.User.register "req" Req R.Type.span
let x = R.User.register "x" X R.Type.span
let depth = R.User.register "depth" Depth R.Type.int
let tick = R.User.register "tick" Tick R.Type.unit

let timed s =
  R.User.write req R.Type.Begin;
  Unix.sleepf s;
  R.User.write req R.Type.End

(* The script of the two threads: (who, is_end), played in this order. *)
let script = [| (0, false); (1, false); (0, true); (1, true); (0, false); (1, true) |]
let m = Mutex.create ()
let c = Condition.create ()
let turn = ref 0

let play me =
  Array.iteri
    (fun i (who, is_end) ->
      if who = me then begin
        Mutex.lock m;
        while !turn <> i do Condition.wait c m done;
        R.User.write x (if is_end then R.Type.End else R.Type.Begin);
        incr turn;
        Condition.broadcast c;
        Mutex.unlock m
      end)
    script

let () =
  timed 0.02; timed 0.02; timed 0.06; timed 0.06;
  (* An outer req of at least 80 ms around an inner one of 20 ms. *)
  R.User.write req R.Type.Begin;
  Unix.sleepf 0.06;
  timed 0.02;
  R.User.write req R.Type.End;
  List.iter (fun v -> R.User.write depth v) [ 1; 2; 3; 4; 5 ];
  for _ = 1 to 3 do R.User.write tick () done;
  let t = Thread.create play 1 in
  play 0;
  Thread.join t;
  print_endline "done"
