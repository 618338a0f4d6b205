(* The `i` bridge alone records the OCaml version: a program that never
   mentions Runtime_events (so the bindings' module, which records it too,
   is left out), built with -runtime-variant i and traced from the start;
   i_file_meta.check runs file_meta.check's checks on its file. *)

let () =
  let keep = ref [] in
  for i = 1 to 50_000 do
    keep := Array.make (1 + (i mod 20)) i :: !keep;
    if i mod 10_000 = 0 then keep := []
  done;
  print_endline "done"
