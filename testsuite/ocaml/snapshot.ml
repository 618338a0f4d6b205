(* Runtime_events_snapshot.write: a traced program keeps what its rings hold
   at a moment of its choosing, GC phases and user events, in a file that
   Runtime_events reads back (and eventring, in snapshot.check); what it
   writes later is not in it; the refusals (not started, a file that
   exists, a missing directory, bad paths) say why; an OCaml signal
   handler may take one; and write_default names it in the current
   directory as `eventring snapshot` would (snapshot.check compares). *)

module R = Runtime_events
module S = Runtime_events_snapshot

type R.User.tag += Step | Work

let step = R.User.register "snap.step" Step R.Type.int
let work = R.User.register "snap.work" Work R.Type.span
let dir = Sys.getenv "OCAML_RUNTIME_EVENTS_DIR"
let snaps = Filename.concat dir "snaps"
let pid = Unix.getpid ()

(* The temporary directory's name and the pid change from run to run. *)
let replace what by m =
  let n = String.length what and b = Buffer.create (String.length m) in
  let rec go i =
    if i >= String.length m then ()
    else if i + n <= String.length m && String.sub m i n = what then begin
      Buffer.add_string b by;
      go (i + n)
    end else begin
      Buffer.add_char b m.[i];
      go (i + 1)
    end
  in
  go 0;
  Buffer.contents b

let hide m = m |> replace dir "DIR" |> replace (string_of_int pid) "PID"

let try_ what f =
  match f () with
  | () -> Printf.printf "%s: ok\n" what
  | exception Failure m -> Printf.printf "%s: Failure %S\n" what (hide m)
  | exception Invalid_argument m ->
      Printf.printf "%s: Invalid_argument %S\n" what (hide m)

(* What a ring file holds, as this test looks at it. *)
type seen = {
  mutable steps : int list;  (* in reverse *)
  mutable begins : int;
  mutable ends : int;
  mutable minors : int;  (* minor collections begun and ended *)
  mutable slices : int;  (* major slices begun *)
  mutable starts : int;  (* ring_start events with this process's pid *)
  mutable lost : int;
}

let read target =
  let s =
    { steps = []; begins = 0; ends = 0; minors = 0; slices = 0; starts = 0;
      lost = 0 }
  in
  let c = R.create_cursor target in
  let cbs =
    R.Callbacks.create
      ~runtime_begin:(fun _ _ p ->
        if p = R.EV_MINOR then s.minors <- s.minors + 1;
        if p = R.EV_MAJOR_SLICE then s.slices <- s.slices + 1)
      ~lifecycle:(fun _ _ l data ->
        if l = R.EV_RING_START && data = Some pid then s.starts <- s.starts + 1)
      ~lost_events:(fun _ n -> s.lost <- s.lost + n)
      ()
    |> R.Callbacks.add_user_event R.Type.int (fun _ _ ev v ->
           if R.User.tag ev = Step then s.steps <- v :: s.steps)
    |> R.Callbacks.add_user_event R.Type.span (fun _ _ ev v ->
           if R.User.tag ev = Work then
             match v with
             | R.Type.Begin -> s.begins <- s.begins + 1
             | R.Type.End -> s.ends <- s.ends + 1)
  in
  ignore (R.read_poll c cbs None);
  R.free_cursor c;
  s

let show what s =
  Printf.printf "%s: steps [%s], %d spans begun, %d ended, minor GCs %b, \
                 major slices %b, ring_start %d, lost %d\n"
    what
    (String.concat " " (List.rev_map string_of_int s.steps))
    s.begins s.ends (s.minors >= 5) (s.slices >= 1) s.starts s.lost

let size p = (Unix.stat p).Unix.st_size

let () =
  Unix.mkdir snaps 0o700;
  (* Named as create_cursor (Some (snaps, pid)) finds it. *)
  let path = Filename.concat snaps (string_of_int pid ^ ".events") in
  try_ "before start" (fun () -> S.write path);
  Printf.printf "  nothing left there: %b\n" (not (Sys.file_exists path));
  R.start ();
  for i = 1 to 5 do
    R.User.write work R.Type.Begin;
    ignore (Sys.opaque_identity (Array.init 10_000 (fun j -> Some j)));
    Gc.minor ();
    R.User.write step i;
    R.User.write work R.Type.End
  done;
  Gc.full_major ();
  try_ "write" (fun () -> S.write path);
  Printf.printf "  mode %o\n" ((Unix.stat path).Unix.st_perm);
  (* After the snapshot: in the live ring only. *)
  R.User.write step 99;
  show "snapshot" (read (Some (snaps, pid)));
  show "live ring" (read None);

  let before = size path in
  try_ "over the same file" (fun () -> S.write path);
  Printf.printf "  the file is untouched: %b\n" (size path = before);
  try_ "in a missing directory" (fun () ->
      S.write (Filename.concat dir "missing/x.events"));
  try_ "empty path" (fun () -> S.write "");
  try_ "path with a NUL" (fun () -> S.write "a\000b");

  (* OCaml runs a Sys.signal handler outside the C signal handler, at a
     point where any OCaml code may run: the snapshot is allowed there. *)
  let from_handler =
    Filename.concat snaps "handler" ^ "/" ^ string_of_int pid ^ ".events"
  in
  Unix.mkdir (Filename.dirname from_handler) 0o700;
  let taken = ref false in
  Sys.set_signal Sys.sigusr1
    (Sys.Signal_handle (fun _ -> S.write from_handler; taken := true));
  Unix.kill pid Sys.sigusr1;
  (* The handler runs at the next poll point: an allocation at the latest. *)
  let tries = ref 0 in
  while (not !taken) && !tries < 1_000_000 do
    ignore (Sys.opaque_identity (ref !tries));
    incr tries
  done;
  Printf.printf "from a signal handler: %b\n" !taken;
  show "its snapshot" (read (Some (Filename.dirname from_handler, pid)))

(* PROGRAM-PID-TIME.events, TIME a UTC millisecond as
   20261124T031500.123Z. *)
let check_default_name name =
  let digits s = String.for_all (fun c -> c >= '0' && c <= '9') s in
  match List.rev (String.split_on_char '-' name) with
  | stamp :: p :: _ :: _ ->
      p = string_of_int pid
      && String.length stamp = 27
      && digits (String.sub stamp 0 8)
      && stamp.[8] = 'T'
      && digits (String.sub stamp 9 6)
      && stamp.[15] = '.'
      && digits (String.sub stamp 16 3)
      && String.sub stamp 19 8 = "Z.events"
  | _ -> false

let () =
  match S.write_default () with
  | name ->
      Printf.printf "write_default: %s, named PROGRAM-PID-TIME.events %b, \
                     in the current directory %b\n"
        (if Filename.is_relative name then "a relative name" else name)
        (check_default_name name)
        (Sys.file_exists (Filename.concat (Sys.getcwd ()) name));
      (* For snapshot.check, which compares it with the tool's name. *)
      let oc = open_out (Filename.concat dir "default-name") in
      output_string oc name;
      close_out oc;
      let d = Filename.concat snaps "default" in
      Unix.mkdir d 0o700;
      Unix.rename name (Filename.concat d (string_of_int pid ^ ".events"));
      show "its snapshot" (read (Some (d, pid)))
  | exception Failure m -> Printf.printf "write_default: Failure %S\n" (hide m)
