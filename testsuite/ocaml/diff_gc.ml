(* An OCaml 4.13 program for `eventring diff` (diff_gc.check): GC work
   through the bindings' hooks and 25 spans of "round", each around a
   round of allocation, so that the file has runtime phases and a user
   span to compare. *)

module R = Runtime_events

type R.User.tag += Round

let round = R.User.register "round" Round R.Type.span

let () =
  R.start ();
  let keep = ref [] in
  for r = 1 to 25 do
    R.User.write round R.Type.Begin;
    for i = 1 to 10_000 do
      keep := Array.make (1 + (i mod 30)) r :: !keep
    done;
    if r mod 5 = 0 then keep := [];
    R.User.write round R.Type.End
  done;
  Gc.full_major ();
  print_endline "done"
