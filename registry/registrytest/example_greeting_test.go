package registrytest_test

import (
	"errors"
	"log"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdsengine/xdsengine/registry"
)

// The examples' resource type: a greeting, carried as a
// google.protobuf.Struct, that may name the greeting it answers.

const greetingTypeURL = "type.googleapis.com/example.greeter.v1.Greeting"

type greeting struct{ Name, Text, ReplyTo string }

// greetingMessage is a greeting as a server sends it.
func greetingMessage(name, text, replyTo string) proto.Message {
	s, err := structpb.NewStruct(map[string]any{"name": name, "text": text, "reply_to": replyTo})
	if err != nil {
		log.Fatal(err)
	}
	return s
}

func decodeGreeting(raw []byte, _ registry.DecodeOptions) (registry.DecodeResult, error) {
	var s structpb.Struct
	if err := proto.Unmarshal(raw, &s); err != nil {
		return registry.DecodeResult{}, err
	}
	g := &greeting{
		Name:    s.GetFields()["name"].GetStringValue(),
		Text:    s.GetFields()["text"].GetStringValue(),
		ReplyTo: s.GetFields()["reply_to"].GetStringValue(),
	}
	if g.Name == "" {
		return registry.DecodeResult{}, errors.New("name: must not be empty")
	}
	return registry.DecodeResult{Name: g.Name, Resource: g}, nil
}

func validateGreeting(r registry.Resource, _ registry.DecodeOptions) error {
	if r.(*greeting).Text == "" {
		return errors.New("text: must not be empty")
	}
	return nil
}

func greetingRefs(r registry.Resource) []registry.Ref {
	if g := r.(*greeting); g.ReplyTo != "" {
		return []registry.Ref{{TypeURL: greetingTypeURL, Name: g.ReplyTo}}
	}
	return nil
}

var greetingType = registry.ResourceType{
	TypeURL:      greetingTypeURL,
	Name:         "Greeting",
	Decoder:      registry.DecoderFunc(decodeGreeting),
	Validator:    registry.ValidatorFunc(validateGreeting),
	Dependencies: registry.DependencyFunc(greetingRefs),
}
