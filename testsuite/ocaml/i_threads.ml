(* Systhreads on the instrumented runtime: whichever thread triggers a
   collection, the runtime's probes write into domain 0, the ring of the
   OCaml runtime lock. *)

let work n =
  let keep = ref [] in
  for i = 1 to n do
    keep := Array.make (1 + (i mod 40)) i :: !keep;
    if i mod 20_000 = 0 then keep := []
  done

let () =
  ignore (Runtime_events.path ());
  let ts = List.init 3 (fun _ -> Thread.create work 150_000) in
  work 50_000;
  List.iter Thread.join ts;
  Gc.full_major ();
  print_endline "ok"
