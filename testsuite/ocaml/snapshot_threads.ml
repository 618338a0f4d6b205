(* Runtime_events_snapshot.write among systhreads: snapshots taken by the
   main thread while workers write, and by a worker itself, each hold, for
   every worker, exactly the events it had written when the copy read the
   ring (1, 2, ..., n in order: nothing torn, duplicated or reordered,
   whichever thread ran during the copy with the runtime lock released);
   the last, taken once they are done, holds them all. *)

module R = Runtime_events
module S = Runtime_events_snapshot

type R.User.tag += Seq

let seq = R.User.register "snapthreads.seq" Seq R.Type.int
let workers = 3
let per_worker = 300
let dir = Sys.getenv "OCAML_RUNTIME_EVENTS_DIR"
let pid = Unix.getpid ()

(* Each snapshot in a directory of its own, named as create_cursor finds
   it. *)
let snapshot name =
  let d = Filename.concat dir name in
  Unix.mkdir d 0o700;
  S.write (Filename.concat d (string_of_int pid ^ ".events"));
  d

(* For every worker, how many of its events the snapshot in [d] holds, or
   a description of what is wrong with them. *)
let counts d =
  let next = Array.make workers 1 and wrong = ref [] and lost = ref 0 in
  let c = R.create_cursor (Some (d, pid)) in
  let cbs =
    R.Callbacks.create ~lost_events:(fun _ n -> lost := !lost + n) ()
    |> R.Callbacks.add_user_event R.Type.int (fun dom _ ev v ->
           if R.User.tag ev = Seq then begin
             let k = v / 100_000 and i = v mod 100_000 in
             if dom <> 0 || k >= workers || i <> next.(k) then
               wrong :=
                 Printf.sprintf "domain %d worker %d event %d after %d" dom
                   k i (next.(k) - 1)
                 :: !wrong
             else next.(k) <- i + 1
           end)
  in
  ignore (R.read_poll c cbs None);
  R.free_cursor c;
  if !lost > 0 then wrong := Printf.sprintf "%d lost" !lost :: !wrong;
  match !wrong with
  | [] -> Ok (Array.map (fun n -> n - 1) next)
  | w -> Error (String.concat "; " (List.rev w))

let () =
  R.start ();
  let taken = ref [] and by_worker = ref "" in
  let worker k () =
    for i = 1 to per_worker do
      R.User.write seq ((k * 100_000) + i);
      ignore (Sys.opaque_identity (Array.make 50 i));
      if i = per_worker / 2 && k = 0 then by_worker := snapshot "by-worker";
      if i mod 20 = 0 then Thread.yield ()
    done
  in
  let ts = List.init workers (fun k -> Thread.create (worker k) ()) in
  for j = 1 to 5 do
    taken := snapshot (Printf.sprintf "during-%d" j) :: !taken;
    Thread.yield ()
  done;
  List.iter Thread.join ts;
  let final = snapshot "final" in
  let bad = ref 0 in
  List.iter
    (fun d ->
      match counts d with
      | Ok _ -> ()
      | Error w ->
          incr bad;
          Printf.printf "%s: %s\n" (Filename.basename d) w)
    !taken;
  Printf.printf "%d snapshots taken while the workers ran, %d wrong\n"
    (List.length !taken) !bad;
  (* Worker 0 took it right after its own 150th event, and wrote nothing
     during the copy. *)
  (match counts !by_worker with
   | Ok n -> Printf.printf "taken by worker 0: %d of its events\n" n.(0)
   | Error w -> Printf.printf "taken by worker 0: %s\n" w);
  match counts final with
  | Ok n ->
      Printf.printf "final: %s\n"
        (String.concat " " (Array.to_list (Array.map string_of_int n)))
  | Error w -> Printf.printf "final: %s\n" w
