package wire

import "fmt"

// OpName is the name traces and fault patterns give a request's opcode
// (CREATE, GETCHILDREN2, PING, ...), as the simulated ensemble and live
// mode both name them.
func OpName(op int32) string {
	switch op {
	case OpCreate:
		return "CREATE"
	case OpDelete:
		return "DELETE"
	case OpExists:
		return "EXISTS"
	case OpGetData:
		return "GETDATA"
	case OpSetData:
		return "SETDATA"
	case OpGetACL:
		return "GETACL"
	case OpSetACL:
		return "SETACL"
	case OpGetChildren:
		return "GETCHILDREN"
	case OpSync:
		return "SYNC"
	case OpPing:
		return "PING"
	case OpGetChildren2:
		return "GETCHILDREN2"
	case OpCheck:
		return "CHECK"
	case OpMulti:
		return "MULTI"
	case OpClose:
		return "CLOSE"
	case OpSetAuth:
		return "AUTH"
	case OpSetWatches:
		return "SETWATCHES"
	case 15:
		return "CREATE2"
	case 19:
		return "CREATECONTAINER"
	case 21:
		return "CREATETTL"
	case 105:
		return "SETWATCHES2"
	case 106:
		return "ADDWATCH"
	case 18:
		return "REMOVEWATCHES"
	}
	return fmt.Sprintf("OP%d", op)
}
