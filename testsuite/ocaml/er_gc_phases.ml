(* A GC-heavy program (lists, arrays, finalisers, Gc.full_major, Gc.major,
   Gc.compact) for the patched normal runtime (-runtime-variant _er).
   er_gc_phases.check compares its ring file with the same program's on
   the instrumented runtime (-runtime-variant i) and the events with the
   counts Gc.quick_stat gives, which the program prints; the user event
   er.stats marks the point in the ring where they were taken. *)

module R = Runtime_events

type R.User.tag += Stats

let stats = R.User.register "er.stats" Stats R.Type.unit

let finalised = ref 0

let counts st = Gc.(st.minor_collections, st.major_collections, st.compactions)

let () =
  (* No automatic compaction (max_overhead >= 1000000): an automatic one
     also finishes a major cycle outside a slice, which the check would
     have to tell apart from the cycles of Gc.full_major. *)
  Gc.set { (Gc.get ()) with Gc.max_overhead = 1_000_000 };
  let keep = ref [] and arrays = ref [||] in
  for round = 1 to 4 do
    for i = 1 to 100_000 do
      keep := Array.make (1 + (i mod 150)) i :: !keep;
      if i mod 1000 = 0 then begin
        let r = ref i in
        Gc.finalise (fun _ -> incr finalised) r;
        arrays := Array.append !arrays [| Array.make 200 (float i) |]
      end;
      if i mod 25_000 = 0 then keep := List.filteri (fun j _ -> j mod 3 = 0) !keep
    done;
    (match round with
     | 1 -> Gc.full_major ()
     | 2 -> Gc.major ()
     | 3 -> Gc.compact ()
     | _ -> Gc.minor ());
    if round mod 2 = 0 then arrays := [||]
  done;
  keep := [];
  Gc.full_major ();
  Gc.compact ();
  (* The counts and the marker with no collection between: quick_stat reads
     the counts before it allocates its record, which may collect; a
     second quick_stat that reads the same counts shows that nothing
     collected in between, marker included. *)
  let rec settle n =
    let st = Gc.quick_stat () in
    R.User.write stats ();
    let again = Gc.quick_stat () in
    if counts st = counts again || n = 0 then st else settle (n - 1)
  in
  let st = settle 10 in
  Printf.printf "minor %d\nmajor %d\ncompactions %d\n"
    st.Gc.minor_collections st.Gc.major_collections st.Gc.compactions;
  Printf.printf "finalisers ran: %b\n" (!finalised > 0);
  print_endline "done"
