(* runtime_events_thread.ml -- see the interface.  The thread's id and its
   name are the calling thread's own, kept in C (runtime_events_stubs.c):
   eventring_thread_id() and eventring_thread_name() of eventring(3). *)

external set_name : string -> unit = "caml_eventring_ml_thread_name"
