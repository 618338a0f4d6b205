(* Stress on the patched normal runtime (-runtime-variant _er): Unix.fork
   in the middle of a major cycle.  4.13's Gc.full_major ends by starting
   the next cycle (its last sweep asks for a minor collection, which runs
   with the slice that darkens the roots), and small Gc.major_slice calls
   mark part of a large live heap; Gc.quick_stat shows no cycle finished
   by then.  The child goes on marking the cycle it inherited (slices,
   then Gc.full_major), the parent too; both exit normally.
   er_stress_fork.check reads both files. *)

let majors () = (Gc.quick_stat ()).Gc.major_collections

let () =
  Runtime_events.start ();
  Gc.set { (Gc.get ()) with Gc.max_overhead = 1_000_000 };
  let live = Array.init 200_000 (fun i -> Array.make (1 + (i mod 8)) i) in
  Gc.full_major ();
  let m0 = majors () in
  ignore (Gc.major_slice 1);  (* starts a cycle if none is under way *)
  for _ = 1 to 5 do ignore (Gc.major_slice 100) done;
  let mid = majors () = m0 in
  Printf.printf "mid-cycle at the fork: %b\n" mid;
  flush stdout;
  match Unix.fork () with
  | 0 ->
      for _ = 1 to 5 do ignore (Gc.major_slice 100) done;
      let still = majors () = m0 in
      Gc.full_major ();
      let keep = ref [] in
      for i = 1 to 100_000 do keep := Array.make (1 + (i mod 30)) i :: !keep done;
      ignore (Sys.opaque_identity live);
      (* Exit status 4: the child's slices finished the inherited cycle,
         which the test would then not be testing. *)
      exit (if still && majors () >= m0 + 2 then 0 else 4)
  | child ->
      let _, st = Unix.waitpid [] child in
      Printf.printf "child exited: %b\n" (st = Unix.WEXITED 0);
      for _ = 1 to 5 do ignore (Gc.major_slice 100) done;
      Gc.full_major ();
      ignore (Sys.opaque_identity live);
      Printf.printf "parent's cycles: %d\n" (majors () - m0)
