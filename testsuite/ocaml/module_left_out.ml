(* module_left_out -- a program linked with the runtime_events package
   whose code never uses Runtime_events: linking leaves the module out,
   and with it the GC probes, so tracing started from the environment
   records no GC event; the library says so at exit, naming
   runtime_events.auto (module_left_out.check). *)
let () =
  let l = ref [] in
  for i = 1 to 200_000 do
    l := [ i ] :: !l;
    if i mod 1000 = 0 then l := []
  done;
  Gc.full_major ();
  print_endline "done"
