(* Written as for OCaml 5's Runtime_events: the program reads its own
   events through the callbacks API and checks what the runtime reports --
   phases begin and end in matched pairs, minor collections counted (one
   minor_local_roots per collection, as in OCaml 5), the major GC's
   marking and sweeping, each Gc.full_major, a compaction, minor_promoted
   once per minor collection, nothing lost.  On the patched normal
   runtime (-runtime-variant _er) every line is true;
   er_runtime5.check also runs it on the hooks-only runtime, which sees
   less. *)

module R = Runtime_events

let () =
  R.start ();
  let cursor = R.create_cursor None in
  let stack = ref [] and unmatched = ref 0 and lost = ref 0 in
  let begins = Hashtbl.create 64 and counters = Hashtbl.create 16 in
  let bump t k = Hashtbl.replace t k (1 + Option.value ~default:0 (Hashtbl.find_opt t k)) in
  let seen t k = Option.value ~default:0 (Hashtbl.find_opt t k) in
  let cbs =
    R.Callbacks.create
      ~runtime_begin:(fun _ _ p -> stack := p :: !stack; bump begins p)
      ~runtime_end:(fun _ _ p ->
          match !stack with
          | q :: rest when q = p -> stack := rest
          | _ -> incr unmatched)
      ~runtime_counter:(fun _ _ c _ -> bump counters c)
      ~lost_events:(fun _ n -> lost := !lost + n)
      ()
  in
  let poll () = ignore (R.read_poll cursor cbs None) in
  let st0 = Gc.quick_stat () in
  poll ();
  let keep = ref [] in
  for round = 1 to 3 do
    for i = 1 to 60_000 do
      keep := Array.make (1 + (i mod 120)) i :: !keep;
      if i mod 500 = 0 then poll ();
      if i mod 20_000 = 0 then keep := []
    done;
    Gc.full_major ();
    poll ();
    if round = 2 then begin Gc.compact (); poll () end
  done;
  (* The counts, then the events up to them: after Gc.minor, reading the
     counts (whose record is allocated in the now empty minor heap) and
     polling collect nothing, which a second quick_stat confirms. *)
  Gc.minor ();
  let st = Gc.quick_stat () in
  poll ();
  let st' = Gc.quick_stat () in
  if st'.Gc.minor_collections <> st.Gc.minor_collections then
    (prerr_endline "a minor collection while reading the last events";
     exit 3);
  let minors = st.Gc.minor_collections - st0.Gc.minor_collections in
  Printf.printf "phases matched: %b\n" (!unmatched = 0 && !stack = []);
  Printf.printf "minor collections counted: %b\n"
    (seen begins R.EV_MINOR_LOCAL_ROOTS = minors);
  Printf.printf "minor_promoted per minor collection: %b\n"
    (seen counters R.EV_C_MINOR_PROMOTED = minors);
  Printf.printf "major marking and sweeping seen: %b\n"
    (seen begins R.EV_MAJOR_MARK > 0 && seen begins R.EV_MAJOR_SWEEP > 0);
  Printf.printf "full majors counted: %d\n" (seen begins R.EV_EXPLICIT_GC_FULL_MAJOR);
  Printf.printf "compaction seen: %b\n" (seen begins R.EV_COMPACT > 0);
  Printf.printf "lost events: %d\n" !lost;
  R.free_cursor cursor
