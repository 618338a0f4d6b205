(* The counters that only the bindings' GC hooks give (minor_allocated,
   major_allocated_words, major_heap_words) on the patched normal runtime
   (-runtime-variant _er), whose own probes give the phases: a runtime
   with probes reports at least every counter the hooks-only runtime
   reports (er_hook_counters.check compares `eventring stats`). *)

let () =
  ignore (Runtime_events.path ());
  let keep = ref [] in
  for i = 1 to 300_000 do
    keep := Array.make (1 + (i mod 100)) i :: !keep;
    if i mod 60_000 = 0 then keep := []
  done;
  Gc.full_major ();
  for _ = 1 to 20 do ignore (Gc.major_slice 1000) done;
  Gc.minor ();
  print_endline "done"
