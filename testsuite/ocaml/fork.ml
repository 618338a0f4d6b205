(* Unix.fork in a traced program: the child writes into a ring file of its
   own, which begins with ring_start and fork_child (the parent's pid), and
   the parent's file goes on with fork_parent (the child's pid), as OCaml 5
   writes them. *)

module R = Runtime_events

type R.User.tag += Who

let who = R.User.register "fork.who" Who R.Type.int

let () =
  let dir = Sys.getenv "OCAML_RUNTIME_EVENTS_DIR" in
  R.start ();
  let parent = Unix.getpid () in
  R.User.write who 1;
  match Unix.fork () with
  | 0 ->
      let me = Unix.getpid () in
      let ok = R.path () = Some (Printf.sprintf "%s/%d.events" dir me) in
      R.User.write who 2;
      exit (if ok then 0 else 3)
  | child ->
      let status = snd (Unix.waitpid [] child) in
      Printf.printf "child exited: %b\n" (status = Unix.WEXITED 0);
      R.User.write who 3;
      let show title pid =
        Printf.printf "%s:\n" title;
        let c = R.create_cursor (Some (dir, pid)) in
        let cbs =
          R.Callbacks.create
            ~lifecycle:(fun _ _ l v ->
                Printf.printf "  %s%s\n" (R.lifecycle_name l)
                  (match v with
                   | Some p when p = parent -> " (parent pid)"
                   | Some p when p = child -> " (child pid)"
                   | _ -> ""))
            ()
          |> R.Callbacks.add_user_event R.Type.int (fun _ _ ev v ->
              Printf.printf "  %s = %d\n" (R.User.name ev) v)
        in
        ignore (R.read_poll c cbs None);
        R.free_cursor c
      in
      show "child's file" child;
      show "parent's file" parent
