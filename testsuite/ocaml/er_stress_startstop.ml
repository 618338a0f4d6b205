(* Stress on the patched normal runtime (-runtime-variant _er): tracing
   paused and resumed 1,000 times (the package has no stop: pause is what
   OCaml 5's Runtime_events offers), with GC work both while tracing
   (Gc.minor, a Gc.compact every 100 rounds) and while paused (Gc.minor,
   Gc.full_major every 100 rounds), which must leave no event.
   er_stress_startstop.check reads the file. *)

module R = Runtime_events

let () =
  R.start ();
  let keep = ref [] in
  for i = 1 to 1000 do
    for j = 1 to 200 do keep := Array.make (1 + (j mod 20)) j :: !keep done;
    Gc.minor ();
    if i mod 100 = 0 then (keep := []; Gc.compact ());
    R.pause ();
    for j = 1 to 200 do keep := Array.make (1 + (j mod 20)) j :: !keep done;
    Gc.minor ();
    if i mod 100 = 50 then Gc.full_major ();
    R.resume ()
  done;
  print_endline "done"
