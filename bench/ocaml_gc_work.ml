(* ocaml_gc_work.ml -- the GC-heavy OCaml program that bench_ocaml_runtime
   times, linked four ways (bench/ocaml.mk): the same code on the stock
   runtime and on the patched ones, so that what differs is the runtime.

   It never mentions Runtime_events: it is linked with the package
   runtime_events.auto, so OCAML_RUNTIME_EVENTS_START=1 traces it as it
   would any program.

   The work, in rounds: many short lists that die young (the minor heap
   fills and is collected over and over); one in eight of them kept, as
   an array, in a table of 32768 slots whose old entries are dropped as
   new ones come (data that survives into the major heap and dies there,
   so that the major GC marks and sweeps in earnest); every 64th round a
   block too big for the minor heap (allocated in the major heap
   directly).  The argument scales the number of rounds (default 1.0,
   about half a second here); the output is a checksum and the GC's
   counts, so that the work cannot be optimised away. *)

let table_size = 32768
let table = Array.make table_size [||]
let big = ref [||]

let () =
  let scale =
    if Array.length Sys.argv > 1 then float_of_string Sys.argv.(1) else 1.0
  in
  let rounds = max 1 (int_of_float (4500. *. scale)) in
  let sum = ref 0 and slot = ref 0 in
  for r = 1 to rounds do
    for i = 1 to 1000 do
      let l = List.init (8 + (i land 15)) (fun j -> i + j) in
      sum := !sum + List.length l;
      if i land 7 = 0 then begin
        table.(!slot) <- Array.of_list l;
        slot := (!slot + 1) land (table_size - 1)
      end
    done;
    if r land 63 = 0 then big := Array.make 4096 r
  done;
  let st = Gc.quick_stat () in
  Printf.printf "ocaml_gc_work: %d rounds, checksum %d, %d minor collections, \
                 %d major cycles\n"
    rounds (!sum + Array.length !big) st.Gc.minor_collections
    st.Gc.major_collections
