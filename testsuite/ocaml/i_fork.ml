(* Unix.fork in a program on the instrumented runtime: the child gets a ring
   file of its own, where its GC phases go, and the parent's file keeps
   only the parent's. *)

let () =
  ignore (Runtime_events.path ());
  Gc.full_major ();
  flush stdout;
  match Unix.fork () with
  | 0 ->
      Gc.compact ();
      print_endline "child";
      exit 0
  | pid ->
      let _, st = Unix.waitpid [] pid in
      assert (st = Unix.WEXITED 0);
      Gc.minor ();
      print_endline "parent"
