(* Written as for OCaml 5's Runtime_events: a forked child (Unix.fork)
   writes into a ring file of its own, which the parent reads through the
   callbacks API once the child is gone: it begins with ring_start and
   fork_child, holds the child's Gc.compact (phases matched) and none of
   the parent's, and the parent's own file has fork_parent and no
   compaction.  er_fork5.check also runs it on the hooks-only runtime,
   which shows no compaction phase in the child's file. *)

module R = Runtime_events

type summary = {
  mutable lifecycle : R.lifecycle list;  (* in reverse *)
  mutable compactions : int;
  mutable full_majors : int;
  mutable unmatched : int;
  mutable lost : int;
}

let read dir pid =
  let s = { lifecycle = []; compactions = 0; full_majors = 0; unmatched = 0;
            lost = 0 } in
  let stack = ref [] in
  let cbs =
    R.Callbacks.create
      ~runtime_begin:(fun _ _ p ->
          stack := p :: !stack;
          if p = R.EV_COMPACT then s.compactions <- s.compactions + 1;
          if p = R.EV_EXPLICIT_GC_FULL_MAJOR then s.full_majors <- s.full_majors + 1)
      ~runtime_end:(fun _ _ p ->
          match !stack with
          | q :: rest when q = p -> stack := rest
          | _ -> s.unmatched <- s.unmatched + 1)
      ~lifecycle:(fun _ _ l _ -> s.lifecycle <- l :: s.lifecycle)
      ~lost_events:(fun _ n -> s.lost <- s.lost + n)
      ()
  in
  let c = R.create_cursor (Some (dir, pid)) in
  ignore (R.read_poll c cbs None);
  R.free_cursor c;
  if !stack <> [] then s.unmatched <- s.unmatched + 1;
  s

let () =
  let dir = Sys.getenv "OCAML_RUNTIME_EVENTS_DIR" in
  R.start ();
  (* No automatic compaction (Gc.full_major may start one when the heap is
     mostly free): the only compaction is the child's Gc.compact. *)
  Gc.set { (Gc.get ()) with Gc.max_overhead = 1_000_000 };
  Gc.full_major ();
  flush stdout;
  match Unix.fork () with
  | 0 ->
      let keep = ref [] in
      for i = 1 to 50_000 do keep := Array.make (1 + (i mod 50)) i :: !keep done;
      keep := [];
      Gc.compact ();
      exit 0
  | child ->
      let _, st = Unix.waitpid [] child in
      Printf.printf "child exited: %b\n" (st = Unix.WEXITED 0);
      let c = read dir child and p = read dir (Unix.getpid ()) in
      let first2 l = match List.rev l with a :: b :: _ -> [a; b] | l -> l in
      Printf.printf "child's file starts: %s\n"
        (String.concat ", " (List.map R.lifecycle_name (first2 c.lifecycle)));
      Printf.printf "child's compaction seen: %b\n" (c.compactions > 0);
      Printf.printf "child's file without the parent's full major: %b\n"
        (c.full_majors = 0);
      Printf.printf "child's phases matched: %b\n" (c.unmatched = 0);
      Printf.printf "parent's fork_parent seen: %b\n"
        (List.mem R.EV_FORK_PARENT p.lifecycle);
      Printf.printf "parent's full major seen: %b\n" (p.full_majors = 1);
      Printf.printf "parent's file without the child's compaction: %b\n"
        (p.compactions = 0);
      Printf.printf "lost events: %d\n" (c.lost + p.lost)
