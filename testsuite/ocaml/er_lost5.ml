(* Written as for OCaml 5's Runtime_events: with a small ring
   (OCAMLRUNPARAM e=10: 1024 words) the GC of a program that does not read
   for a while overwrites events, and the reader says so through
   lost_events before reading on; what follows the loss is read, a
   compaction included on the patched normal runtime (-runtime-variant
   _er).  er_lost5.check runs it on the hooks-only runtime too. *)

module R = Runtime_events

let () =
  R.start ();
  let cursor = R.create_cursor None in
  let lost = ref 0 and calls = ref 0 and after_loss = ref 0
  and compactions = ref 0 in
  let cbs =
    R.Callbacks.create
      ~runtime_begin:(fun _ _ p ->
          if !lost > 0 then incr after_loss;
          if p = R.EV_COMPACT then incr compactions)
      ~lost_events:(fun _ n -> incr calls; lost := !lost + n)
      ()
  in
  ignore (R.read_poll cursor cbs None);
  let keep = ref [] in
  for i = 1 to 600_000 do
    keep := Array.make (1 + (i mod 100)) i :: !keep;
    if i mod 50_000 = 0 then keep := []
  done;
  Gc.full_major ();
  ignore (R.read_poll cursor cbs None);
  Printf.printf "lost events reported: %b\n" (!calls > 0 && !lost > 0);
  Printf.printf "events read after the loss: %b\n" (!after_loss > 0);
  (* A few events, fewer than the ring holds: none lost, the compaction's
     phase read (on a runtime that has one). *)
  let before = !lost in
  Gc.compact ();
  ignore (R.read_poll cursor cbs None);
  Printf.printf "nothing more lost: %b\n" (!lost = before);
  Printf.printf "compaction seen: %b\n" (!compactions > 0);
  R.free_cursor cursor
