(* runtime_events_snapshot.ml -- see the interface; the stub
   (runtime_events_snapshot_stubs.c) says why it releases the runtime
   lock during the copy. *)

external write : string -> unit = "caml_eventring_ml_snapshot_write"

external write_default : unit -> string
  = "caml_eventring_ml_snapshot_write_default"
