(* Stress on the patched normal runtime (-runtime-variant _er): Gc.compact
   while tracing, 40 times, over a heap of lists, arrays, floats and
   finalised values, with the program reading its own events between
   compactions (its callbacks are heap values the compactions move).  It
   checks that it saw one compaction phase per compaction Gc.quick_stat
   counts (an automatic compaction included) and matched pairs;
   er_stress_compact.check reads the file with eventring. *)

module R = Runtime_events

let () =
  R.start ();
  let cursor = R.create_cursor None in
  let compactions = ref 0 and stack = ref [] and unmatched = ref 0
  and lost = ref 0 in
  let cbs =
    R.Callbacks.create
      ~runtime_begin:(fun _ _ p ->
          stack := p :: !stack;
          if p = R.EV_COMPACT then incr compactions)
      ~runtime_end:(fun _ _ p ->
          match !stack with
          | q :: rest when q = p -> stack := rest
          | _ -> incr unmatched)
      ~lost_events:(fun _ n -> lost := !lost + n)
      ()
  in
  let poll () = ignore (R.read_poll cursor cbs None) in
  let c0 = (Gc.quick_stat ()).Gc.compactions in
  let finalised = ref 0 in
  let live = ref [] in
  for round = 1 to 40 do
    for i = 1 to 5_000 do
      let v = Array.make (1 + (i mod 40)) (float (i * round)) in
      if i mod 100 = 0 then Gc.finalise (fun _ -> incr finalised) v;
      if i mod 3 = 0 then live := v :: !live
    done;
    if round mod 4 = 0 then live := List.filteri (fun j _ -> j mod 5 = 0) !live;
    poll ();
    Gc.compact ();
    poll ()
  done;
  Gc.minor ();
  let st = Gc.quick_stat () in
  poll ();
  if (Gc.quick_stat ()).Gc.compactions <> st.Gc.compactions then exit 3;
  Printf.printf "compactions counted: %b\n"
    (!compactions = st.Gc.compactions - c0 && !compactions >= 40);
  Printf.printf "phases matched: %b\n" (!unmatched = 0 && !stack = []);
  Printf.printf "finalisers ran: %b\n" (!finalised > 0);
  Printf.printf "lost events: %d\n" !lost;
  Printf.printf "live values intact: %b\n"
    (List.for_all (fun a -> Array.length a >= 1 && a.(0) = a.(Array.length a - 1)) !live);
  R.free_cursor cursor
