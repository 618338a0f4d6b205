(* auto_linked -- the fix that module_left_out's hint names: the same
   program, linked with runtime_events.auto, records its GC phases and
   gets no hint (auto_linked.check). *)
let () =
  let l = ref [] in
  for i = 1 to 200_000 do
    l := [ i ] :: !l;
    if i mod 1000 = 0 then l := []
  done;
  Gc.full_major ();
  print_endline "done"
