(* runtime_events_auto.ml -- the module of the ocamlfind package
   runtime_events.auto.  Linked as an object file (not from an archive), it
   is always part of the program, and it pulls Runtime_events in with it:
   Runtime_events' initialisation installs the GC probes, so that
   OCAML_RUNTIME_EVENTS_START=1 traces a program that never mentions the
   module. *)

let () = ignore (Runtime_events.path : unit -> string option)
