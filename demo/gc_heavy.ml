(* gc_heavy.ml -- the OCaml program of `make demo`: a workload that keeps
   the garbage collector busy, traced through the runtime_events package
   (eventring's Runtime_events for OCaml 4.13).

   It never starts tracing itself: run it under `eventring SUBCOMMAND --
   ./gc_heavy`, which sets OCAML_RUNTIME_EVENTS_START, or set that variable
   by hand.  The runtime then reports its minor collections and major
   slices (the GC pauses that `eventring latency` measures); the program
   adds a user span per round of work and a user int with the size of the
   major heap after each round.

   The work: each round builds many short lists (which die young, so the
   minor heap fills and is collected over and over) and keeps one in
   seven as an array in a table whose old entries are dropped as new ones
   come (so that some data survives to the major heap, which the major
   GC then has to mark and sweep).  The rounds are shared by the main
   thread and two systhreads, which take turns under the runtime lock:
   each names itself (Runtime_events_thread), so that `eventring trace`
   draws each on a track of its own, with the collections it ran. *)

type Runtime_events.User.tag += Round | Heap_kwords

let round_span =
  Runtime_events.User.register "demo.round" Round Runtime_events.Type.span

let heap_kwords =
  Runtime_events.User.register "demo.heap_kwords" Heap_kwords
    Runtime_events.Type.int

let rounds = 1000
let lists_per_round = 2000
let table_size = 8192

let table = Array.make table_size [||]
let checksum = ref 0

(* Rounds first, first + step, ... up to [rounds]. *)
let work name first step =
  Runtime_events_thread.set_name name;
  let round = ref first in
  while !round <= rounds do
    Runtime_events.User.write round_span Runtime_events.Type.Begin;
    for i = 1 to lists_per_round do
      let l = List.init 40 (fun j -> i + j) in
      checksum := !checksum + List.length l;
      if i mod 7 = 0 then
        table.((!round * lists_per_round + i) mod table_size) <- Array.of_list l
    done;
    Runtime_events.User.write round_span Runtime_events.Type.End;
    Runtime_events.User.write heap_kwords ((Gc.quick_stat ()).Gc.heap_words / 1024);
    round := !round + step
  done

let () =
  let workers =
    List.map
      (fun k -> Thread.create (work (Printf.sprintf "worker %d" k) (k + 1)) 3)
      [ 1; 2 ]
  in
  work "main" 1 3;
  List.iter Thread.join workers;
  let st = Gc.quick_stat () in
  Printf.printf "gc_heavy: %d rounds, %d minor collections, %d major cycles \
                 (checksum %d)\n%!"
    rounds st.Gc.minor_collections st.Gc.major_collections !checksum
