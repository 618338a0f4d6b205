(* External monitoring: this program never mentions Runtime_events.  Linked
   with the runtime_events.auto package and run with
   OCAML_RUNTIME_EVENTS_START=1 (and PRESERVE, to keep the file), it leaves
   a ring file in which `eventring dump` finds its GC phases. *)

let () =
  let l = ref [] in
  for i = 1 to 200_000 do
    l := (i, string_of_int i) :: !l;
    if i mod 50_000 = 0 then l := []
  done;
  Gc.full_major ();
  print_endline "done"
