(* Custom span and int events (and a custom type) written by one program
   and read by another: this program re-runs itself as the writer and
   reads the writer's ring file, kept with OCAML_RUNTIME_EVENTS_PRESERVE,
   through create_cursor (Some (dir, pid)). *)

type Runtime_events.User.tag += Request | Queue_length | Message

let string_type =
  let encode buf s =
    let len = min (String.length s) (Bytes.length buf) in
    Bytes.blit_string s 0 buf 0 len;
    len
  in
  let decode buf len = Bytes.sub_string buf 0 len in
  Runtime_events.Type.register ~encode ~decode

let request =
  Runtime_events.User.register "app.request" Request Runtime_events.Type.span

let queue_length =
  Runtime_events.User.register "app.queue_length" Queue_length
    Runtime_events.Type.int

let message = Runtime_events.User.register "app.message" Message string_type

let write () =
  Runtime_events.start ();
  for i = 1 to 3 do
    Runtime_events.User.write request Runtime_events.Type.Begin;
    Runtime_events.User.write queue_length (i * 10);
    Runtime_events.User.write message (Printf.sprintf "request %d" i);
    Runtime_events.User.write request Runtime_events.Type.End
  done;
  (* Events of a name the reader does not know reach it with an unknown
     tag (int) or not at all (custom). *)
  let other = Runtime_events.User.register "writer.only" Request
      Runtime_events.Type.int in
  Runtime_events.User.write other 7

let tag_name = function
  | Request -> "Request"
  | Queue_length -> "Queue_length"
  | Message -> "Message"
  | _ -> "unknown"

let read dir pid =
  let cursor = Runtime_events.create_cursor (Some (dir, pid)) in
  let span d _ ev v =
    Printf.printf "domain %d: %s (%s) %s\n" d (Runtime_events.User.name ev)
      (tag_name (Runtime_events.User.tag ev))
      (match v with Runtime_events.Type.Begin -> "begin" | End -> "end")
  in
  let int d _ ev v =
    Printf.printf "domain %d: %s (%s) = %d\n" d (Runtime_events.User.name ev)
      (tag_name (Runtime_events.User.tag ev)) v
  in
  let msg d _ ev v =
    Printf.printf "domain %d: %s (%s) %S\n" d (Runtime_events.User.name ev)
      (tag_name (Runtime_events.User.tag ev)) v
  in
  let lifecycle _ _ l data =
    match l with
    | Runtime_events.EV_RING_START ->
        Printf.printf "%s, pid %s\n" (Runtime_events.lifecycle_name l)
          (if data = Some pid then "ok" else "wrong")
    | _ -> Printf.printf "%s\n" (Runtime_events.lifecycle_name l)
  in
  let cbs =
    Runtime_events.Callbacks.create ~lifecycle ()
    |> Runtime_events.Callbacks.add_user_event Runtime_events.Type.span span
    |> Runtime_events.Callbacks.add_user_event Runtime_events.Type.int int
    |> Runtime_events.Callbacks.add_user_event string_type msg
  in
  let n = Runtime_events.read_poll cursor cbs None in
  Printf.printf "%s events read\n" (if n >= 15 then "all" else string_of_int n);
  Runtime_events.free_cursor cursor

let () =
  match Sys.argv with
  | [| _; "--write" |] -> write ()
  | _ ->
      let dir = Sys.getenv "OCAML_RUNTIME_EVENTS_DIR" in
      let env =
        Array.append [| "OCAML_RUNTIME_EVENTS_PRESERVE=1" |]
          (Unix.environment ())
      in
      let pid =
        Unix.create_process_env Sys.executable_name
          [| Sys.executable_name; "--write" |] env Unix.stdin Unix.stdout
          Unix.stderr
      in
      (match Unix.waitpid [] pid with
       | _, Unix.WEXITED 0 -> ()
       | _ -> failwith "the writer failed");
      read dir pid
