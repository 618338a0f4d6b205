(* The exceptions Runtime_events raises: Failure for what fails at run time
   (a file that cannot be created or opened), Invalid_argument for a bad
   argument, each with a message that says what went wrong. *)

module R = Runtime_events

type R.User.tag += T

(* The temporary directory's name changes from run to run. *)
let hide_dir m =
  let dir = Sys.getenv "OCAML_RUNTIME_EVENTS_DIR" in
  let n = String.length dir in
  let rec go i =
    if i + n > String.length m then m
    else if String.sub m i n = dir then
      String.sub m 0 i ^ "DIR" ^ String.sub m (i + n) (String.length m - i - n)
    else go (i + 1)
  in
  go 0

let try_ what f =
  match f () with
  | () -> Printf.printf "%s: no exception\n" what
  | exception Failure m -> Printf.printf "%s: Failure %S\n" what (hide_dir m)
  | exception Invalid_argument m ->
      Printf.printf "%s: Invalid_argument %S\n" what (hide_dir m)

let () =
  let dir = Sys.getenv "OCAML_RUNTIME_EVENTS_DIR" in
  try_ "cursor on this process before start" (fun () ->
      ignore (R.create_cursor None));
  try_ "cursor on a missing file" (fun () ->
      ignore (R.create_cursor (Some (dir, 999999))));
  let oc = open_out (Filename.concat dir "1.events") in
  output_string oc "not a ring file";
  close_out oc;
  try_ "cursor on a file that is not a ring" (fun () ->
      ignore (R.create_cursor (Some (dir, 1))));
  try_ "cursor with a negative pid" (fun () ->
      ignore (R.create_cursor (Some (dir, -3))));
  try_ "empty name" (fun () -> ignore (R.User.register "" T R.Type.unit));
  try_ "name of 128 bytes" (fun () ->
      ignore (R.User.register (String.make 128 'x') T R.Type.unit));
  try_ "name of 127 bytes" (fun () ->
      ignore (R.User.register (String.make 127 'x') T R.Type.unit));
  try_ "name with a NUL" (fun () ->
      ignore (R.User.register "a\000b" T R.Type.unit));
  try_ "same name, same type" (fun () ->
      ignore (R.User.register "e.int" T R.Type.int);
      ignore (R.User.register "e.int" T R.Type.int));
  try_ "same name, another type" (fun () ->
      ignore (R.User.register "e.int" T R.Type.span));
  let bad = R.Type.register ~encode:(fun _ () -> 2000) ~decode:(fun _ _ -> ()) in
  let ev = R.User.register "e.bad" T bad in
  try_ "encoder result over 1024, tracing off" (fun () -> R.User.write ev ());
  Unix.putenv "OCAML_RUNTIME_EVENTS_DIR" (Filename.concat dir "missing");
  try_ "start in a missing directory" R.start;
  Unix.putenv "OCAML_RUNTIME_EVENTS_DIR" dir;
  try_ "start" R.start;
  try_ "encoder result over 1024" (fun () -> R.User.write ev ());
  let raising = R.Type.register ~encode:(fun _ () -> raise Exit)
      ~decode:(fun _ _ -> ()) in
  let ev2 = R.User.register "e.raising" T raising in
  (match R.User.write ev2 () with
   | () -> print_endline "encoder exception: lost"
   | exception Exit -> print_endline "encoder exception: raised");
  let c = R.create_cursor None in
  let cbs = R.Callbacks.create () in
  try_ "negative maximum" (fun () -> ignore (R.read_poll c cbs (Some (-1))));
  R.free_cursor c;
  try_ "read_poll on a freed cursor" (fun () -> ignore (R.read_poll c cbs None))
