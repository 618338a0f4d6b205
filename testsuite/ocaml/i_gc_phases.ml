(* GC phases, counters and allocation buckets of the instrumented runtime
   (-runtime-variant i) land in the ring file, once each, and OCaml's own
   CTF eventlog writer is neither linked nor run. *)

let tmp = Sys.getenv_opt "EVENTRING_TEST_TMP"

let record name contents =
  match tmp with
  | None -> ()
  | Some dir ->
      let oc = open_out (Filename.concat dir name) in
      output_string oc contents;
      close_out oc

(* 4.13's eventlog, had it been linked, would write caml-<pid>-<n>.eventlog
   into the current directory (OCAML_EVENTLOG_ENABLED is set). *)
let ctf_files () =
  let prefix = Printf.sprintf "caml-%d-" (Unix.getpid ()) in
  Array.to_list (Sys.readdir (Sys.getcwd ()))
  |> List.filter (fun f -> String.length f > String.length prefix
                           && String.sub f 0 (String.length prefix) = prefix)
  |> List.length

let () =
  ignore (Runtime_events.path ());
  let keep = ref [] in
  for i = 1 to 200_000 do
    keep := Array.make (1 + (i mod 150)) i :: !keep;
    if i mod 50_000 = 0 then keep := []
  done;
  Gc.full_major ();
  Gc.compact ();
  record "exe" Sys.executable_name;
  Printf.printf "ctf files: %d\n" (ctf_files ());
  let st = Gc.quick_stat () in
  record "minors" (string_of_int st.Gc.minor_collections);
  print_endline "done"
