(* A program that mentions neither Gc nor Runtime_events, built with
   `-package runtime_events -linkpkg -runtime-variant i`: the bridge still
   replaces OCaml's eventlog, so OCAML_RUNTIME_EVENTS_START traces it and no
   CTF file is written even with OCAML_EVENTLOG_ENABLED set. *)

let () =
  let keep = ref [] in
  for i = 1 to 300_000 do
    keep := Array.make (1 + (i mod 120)) i :: !keep;
    if i mod 60_000 = 0 then keep := []
  done;
  (match Sys.getenv_opt "EVENTRING_TEST_TMP" with
   | Some dir ->
       let oc = open_out (Filename.concat dir "exe") in
       output_string oc Sys.executable_name;
       close_out oc
   | None -> ());
  print_endline "ok"
