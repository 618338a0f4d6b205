(* An OCaml 4.13 program for `eventring report` (report_gc.check): GC
   work through the bindings' hooks, spans of "batch" around each round
   of allocation and an int "live" after each, so that the page has every
   section; its numbers are compared with `eventring stats --json`. *)

module R = Runtime_events

type R.User.tag += Batch | Live

let batch = R.User.register "batch" Batch R.Type.span
let live = R.User.register "live" Live R.Type.int

let () =
  R.start ();
  let keep = ref [] in
  for round = 1 to 20 do
    R.User.write batch R.Type.Begin;
    for i = 1 to 20_000 do
      keep := Array.make (1 + (i mod 50)) i :: !keep
    done;
    if round mod 5 = 0 then keep := [];
    R.User.write batch R.Type.End;
    R.User.write live (List.length !keep)
  done;
  Gc.full_major ();
  print_endline "done"
