(* A GC-heavy OCaml 4.13 program traced through the bindings:
   `eventring latency` and `eventring stats` read its ring file (kept with
   OCAML_RUNTIME_EVENTS_PRESERVE), whose pauses are 4.13's GC phases as
   the bindings' GC hooks report them. *)

let () =
  Runtime_events.start ();
  let keep = ref [] in
  for i = 1 to 300_000 do
    keep := Array.make (1 + (i mod 100)) i :: !keep;
    if i mod 30_000 = 0 then keep := []
  done;
  Gc.full_major ();
  print_endline "done"
