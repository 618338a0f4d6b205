(* Stress on the patched normal runtime (-runtime-variant _er): the main
   thread pauses and resumes tracing (the package has no stop; pause is
   OCaml 5's) 300 times while another thread allocates (a bounded number
   of iterations each, so the run does not depend on speed).
   er_stress_pause.check: the file decodes with no malformed and no lost
   event (a 4 Mi-word ring), phases nested, 300 pauses and resumes. *)

module R = Runtime_events

let () =
  R.start ();
  let stop = Atomic.make false in
  let worker =
    Thread.create
      (fun () ->
         let keep = ref [] and n = ref 0 in
         while not (Atomic.get stop) || !n < 200_000 do
           keep := Array.make (1 + (!n mod 64)) !n :: !keep;
           incr n;
           if !n mod 10_000 = 0 then keep := [];
           if !n >= 2_000_000 then Atomic.set stop true
         done)
      ()
  in
  for _ = 1 to 300 do
    R.pause ();
    ignore (Array.make 1000 0);
    Thread.yield ();
    R.resume ();
    ignore (Array.make 1000 0);
    Thread.yield ()
  done;
  Atomic.set stop true;
  Thread.join worker;
  Gc.full_major ();
  print_endline "done"
