(* file_meta.ml built with -runtime-variant i: an OCaml 4.13 program traced from the start (OCAML_RUNTIME_EVENTS_START,
   file_meta.env), so that its ring file is made before the bindings
   initialise and learn the OCaml version: file_meta.check finds that
   version, and the labels of EVENTRING_LABELS, in `eventring report`'s
   page, in a snapshot and in the page of the snapshot. *)

module R = Runtime_events

type R.User.tag += Tick

let tick = R.User.register "meta.tick" Tick R.Type.unit

let () =
  let keep = ref [] in
  for i = 1 to 50_000 do
    keep := Array.make (1 + (i mod 20)) i :: !keep;
    if i mod 10_000 = 0 then (keep := []; R.User.write tick ())
  done;
  print_endline "done"
