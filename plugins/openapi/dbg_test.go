package openapi
import ("testing";"encoding/json";"os")
func TestDbg(t *testing.T){
 name:=os.Getenv("DOC")
 doc,err:=Load(readCorpus(t,name),name); if err!=nil {t.Fatal(err)}
 t.Log(doc.Warnings)
 ops,f,err:=Convert(doc,Options{BaseURL: baseURLIfNone(doc)})
 t.Log(f,err)
 for _,o:=range ops { b,_:=json.Marshal(o.Plugin); if os.Getenv("FULL")!="" {t.Log(o.Key, string(b))}; for _,w:=range o.Warnings {t.Log(o.Key, " W: ", w)} }
}
