(* OCaml 4.13's own switches on the instrumented runtime:
   OCAML_EVENTLOG_ENABLED=p starts tracing paused, and Gc.eventlog_resume /
   Gc.eventlog_pause resume and pause it. *)

let () =
  Gc.full_major ();                     (* paused: not recorded *)
  Gc.eventlog_resume ();
  Gc.minor ();                          (* recorded *)
  Gc.eventlog_pause ();
  Gc.compact ();                        (* paused again: not recorded *)
  print_endline "ok"
